"""Reading tool arguments the model produced, which may have any JSON type.

Arguments come from a model, so a field may be missing, the wrong type, or a number sent as a
string. These helpers turn such values into what the tool needs, or into ``None``/a default,
so every tool reports a bad argument the same way instead of raising.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["builtin_invocation", "int_arg", "str_arg"]


def builtin_invocation(name: str, args: Mapping[str, Any]) -> str:
    """The policy string of a builtin: ``name:action`` when an action is given, else ``name``.

    Policy patterns such as ``builtin:memory:remember`` match this string, so the action
    must be the one the tool will actually run (stripped and lower-cased like ``run`` does).
    """
    action = args.get("action")
    if isinstance(action, str) and action.strip():
        return f"{name}:{action.strip().lower()}"
    return name


def str_arg(args: Mapping[str, Any], key: str) -> str | None:
    """``args[key]`` when it is a non-blank string, else ``None``."""
    value = args.get(key)
    if isinstance(value, str) and value.strip():
        return value
    return None


def int_arg(args: Mapping[str, Any], key: str, *, default: int, low: int, high: int) -> int:
    """``args[key]`` as an integer clamped to ``[low, high]``; ``default`` when unusable.

    Models often send numbers as strings ("5") or floats (5.0); both are accepted. A value
    that is not a number at all falls back to ``default`` rather than failing the call,
    because the limit only shapes how much is returned.
    """
    value = args.get(key)
    number: int
    if isinstance(value, bool) or value is None:
        number = default
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.strip().lstrip("-").isdigit():
        number = int(value.strip())
    else:
        number = default
    return max(low, min(high, number))
