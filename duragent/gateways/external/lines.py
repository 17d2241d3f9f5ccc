r"""Reading a child's stdout as lines of at most 1 MiB, whatever it writes.

A gateway is a program someone else wrote: it may print a megabyte without a newline, stray
binary, Windows line endings. ``LineReader`` never holds more than one line's cap (plus one
read) in memory: a line longer than ``max_bytes`` is drained up to its newline and reported
as ``Oversized`` (the caller logs and skips it); ``\r`` before the newline is dropped;
bytes that are not UTF-8 are replaced, so the line still reaches the JSON check that rejects
it in words. A last line without a newline at end of stream is still a line.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

__all__ = ["MAX_LINE_BYTES", "LineReader", "Oversized"]

MAX_LINE_BYTES = 1024 * 1024
READ_SIZE = 64 * 1024


@dataclass(frozen=True, slots=True)
class Oversized:
    """A line longer than the cap, skipped: how long it was."""

    size: int


class LineReader:
    """Bounded lines from an ``asyncio.StreamReader`` (see module docstring)."""

    def __init__(self, stream: asyncio.StreamReader, *, max_bytes: int = MAX_LINE_BYTES) -> None:
        self._stream = stream
        self._max = max_bytes
        self._buffer = bytearray()
        self._eof = False

    async def next(self) -> str | Oversized | None:
        """The next line (without its end), an ``Oversized`` marker, or None at end of stream."""
        skipped = 0  # bytes of an oversized line dropped so far
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                if skipped or len(line) > self._max:
                    return Oversized(skipped + len(line))
                return _text(line)
            if len(self._buffer) > self._max:  # no newline yet and already too long: drop
                skipped += len(self._buffer)
                self._buffer.clear()
            if self._eof:
                if skipped or self._buffer:
                    rest = bytes(self._buffer)
                    self._buffer.clear()
                    return Oversized(skipped + len(rest)) if skipped else _text(rest)
                return None
            chunk = await self._stream.read(READ_SIZE)
            if not chunk:
                self._eof = True
            self._buffer += chunk


def _text(line: bytes) -> str:
    return line.removesuffix(b"\r").decode("utf-8", errors="replace")
