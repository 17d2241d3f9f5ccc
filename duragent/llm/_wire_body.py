"""Request bodies as ready JSON bytes, built in time independent of the SDKs' per-field transform.

The ``openai`` SDK walks every parameter of ``create()`` through a recursive typed transform
(~0.5 ms per message), on the event loop, on every call: a 2,000-message history cost
~300 ms per model call. The providers therefore hand the SDK's lower-level ``post`` a body they
serialised themselves (the SDK still owns transport, headers, errors and streaming).

The bytes are exactly what the SDK would send (same key order, ``ensure_ascii=False``, compact
separators, ``allow_nan=False``; tests compare them on the wire). Each message is serialised
once and its fragment kept for as long as the message object lives (messages are immutable and
compared by identity), so a turn only joins cached fragments; the few new messages are
serialised with a cooperative yield whenever a slice of work passes ``SLICE_SECONDS``, so a
cold cache on a 2,000-message history does not hold the event loop either.
"""

from __future__ import annotations

import asyncio
import functools
import json
import operator
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from itertools import compress, count
from typing import Any, Generic, TypeVar, cast

from duragent.core.messages import Message

__all__ = ["SLICE_SECONDS", "FragmentCache", "Slicer", "dumps", "json_array", "json_object"]

SLICE_SECONDS = 0.0005
"""Longest run of serialisation between two yields to the event loop."""

T = TypeVar("T")


def dumps(value: Any) -> bytes:
    """``value`` as the SDKs serialise a body (``openapi_dumps``): compact UTF-8 JSON."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def json_array(items: Sequence[bytes]) -> list[bytes]:
    """A JSON array of serialised items, as parts for ``json_object`` (copied once, there)."""
    if not items:
        return [b"[]"]
    parts = [b","] * (2 * len(items) + 1)
    parts[0] = b"["
    parts[1::2] = items
    parts[-1] = b"]"
    return parts


def json_object(fields: Iterable[tuple[str, bytes | list[bytes]]]) -> bytes:
    """A JSON object from (key, serialised value or its parts) pairs, in the given order.

    Joined once: a 2,000-message body is ~0.5 MB, and every extra ``+`` would copy it again.
    """
    parts: list[bytes] = [b"{"]
    for key, value in fields:
        if len(parts) > 1:
            parts.append(b",")
        parts.append(dumps(key) + b":")
        if isinstance(value, list):
            parts.extend(value)
        else:
            parts.append(value)
    parts.append(b"}")
    return b"".join(parts)


class Slicer:
    """Yields to the event loop whenever ``SLICE_SECONDS`` of work passed since the last yield."""

    def __init__(self) -> None:
        self._started = time.perf_counter()

    async def tick(self) -> None:
        """Call between units of work; returns at once unless the slice is used up."""
        if time.perf_counter() - self._started > SLICE_SECONDS:
            await asyncio.sleep(0)
            self._started = time.perf_counter()


_is_none = functools.partial(operator.is_, None)


class FragmentCache(Generic[T]):
    """Per-message wire fragments, dropped with their message (identity keys).

    Keyed by ``id(message)`` in a plain dict, so a whole request's lookups run in C
    (``map(dict.get, map(id, messages))``: ~40 ns a message, where a ``WeakKeyDictionary``
    builds a weak reference per lookup in Python, ~130 ns). A ``weakref.finalize`` per
    message removes its entry when the message is freed, before its id can be reused.
    """

    def __init__(self, build: Callable[[Message], T]) -> None:
        self._build = build
        self._items: dict[int, T] = {}

    def __len__(self) -> int:
        return len(self._items)

    def _add(self, message: Message) -> T:
        fragment = self._items[id(message)] = self._build(message)
        weakref.finalize(message, self._items.pop, id(message), None).atexit = False
        return fragment

    async def fragments(self, messages: Sequence[Message]) -> list[T]:
        """The fragment of each message; building missing ones yields to the loop between slices."""
        out: list[T | None] = list(map(self._items.get, map(id, messages)))
        if None in out:  # fragments are bytes or tuples: never equal to None
            slicer = Slicer()
            for i in compress(count(), map(_is_none, out)):  # found in C: the few new ones
                out[i] = self._add(messages[i])
                await slicer.tick()
        if len(out) >= 256:
            await asyncio.sleep(0)  # a fresh slice for the caller's join of a large body
        return cast("list[T]", out)  # every None was filled in above
