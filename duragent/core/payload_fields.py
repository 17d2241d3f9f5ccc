"""How a field of a session event's payload reads, whatever wrote the record.

A payload is JSON read back from ``events.jsonl``: written by this version, an older one or
the reference, so a field may be missing, ``null`` or of another JSON type than today's
writer gives it. These readers turn such a value into the field's type the way readers of the
log always did, so an old record replays as it did before the views (``core.payloads``).
The views the session applies on every event test for the usual type inline first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["as_mapping", "as_maybe_seq", "as_maybe_text", "as_number", "as_text", "new_view"]

new_view = tuple.__new__
"""Builds a view (a ``NamedTuple``) from its fields in order: the tuple's own ``__new__`` is a
Python function costing as much again as reading the payload, on every event applied."""


def as_text(value: Any, default: str = "") -> str:
    """A text field; missing or null is ``default``, another JSON type its ``str``."""
    if value is None:
        return default
    return value if value.__class__ is str else str(value)


def as_maybe_text(value: Any) -> str | None:
    """An optional text field: missing or null stays None, anything else is text."""
    return value if value is None or value.__class__ is str else str(value)


def as_number(value: Any) -> int:
    """A count or seq; missing, null or empty is 0 (a non-number raises, as it always did)."""
    return int(value or 0)


def as_maybe_seq(value: Any) -> int | None:
    """An optional seq: a JSON number (``true`` counts as 1, as it always did), else None."""
    return int(value) if isinstance(value, int) else None


def as_mapping(value: Any) -> Mapping[str, Any] | None:
    """An object field (usage, budget, arguments); any other JSON type reads as absent."""
    return value if value.__class__ is dict or isinstance(value, Mapping) else None
