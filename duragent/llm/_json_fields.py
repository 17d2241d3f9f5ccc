"""Reading streamed chunks as plain JSON, with the types checked where they are read.

The SDKs can build a typed model object for every streamed chunk (``construct_type``: a
recursive walk over type hints, ~70 µs a chunk, ~0.7 ms of CPU for a ten-chunk answer), and
that was the largest cost of a model call left after the request body was pre-built. The
providers therefore ask the SDK's stream for the decoded JSON (``AsyncStream[object]``: the SDK
still parses the SSE, raises for error events and owns the connection) and read the few fields
they use through these helpers. A field of the wrong type raises ``WireShapeError``, a
``ValueError`` that the providers report as malformed stream data; a missing or ``null`` field
reads as absent, as it did through the SDK's lenient models.
"""

from __future__ import annotations

from typing import Any

__all__ = ["WireShapeError", "integer", "items", "obj", "text"]


class WireShapeError(ValueError):
    """A streamed chunk whose JSON does not have the shape the API documents."""


def obj(value: Any, where: str = "chunk") -> dict[str, Any]:
    """``value`` as a JSON object; ``None`` reads as an empty one."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise WireShapeError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def text(parent: dict[str, Any], key: str) -> str | None:
    """The string at ``key``, or ``None`` when it is absent or null."""
    value = parent.get(key)
    if value is None or isinstance(value, str):
        return value
    raise WireShapeError(f"{key}: expected a string, got {type(value).__name__}")


def integer(parent: dict[str, Any], key: str) -> int:
    """The whole number at ``key`` (0 when absent or null); a bool or fraction is refused."""
    value = parent.get(key)
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise WireShapeError(f"{key}: expected an integer, got {type(value).__name__}")


def items(parent: dict[str, Any], key: str) -> list[Any]:
    """The array at ``key`` (empty when absent or null)."""
    value = parent.get(key)
    if value is None:
        return []
    if isinstance(value, list):
        return value
    raise WireShapeError(f"{key}: expected an array, got {type(value).__name__}")
