"""One timer for a whole stream: the idle limit per read and the call's deadline.

``ResilientProvider.stream`` limits each read of a provider's stream (something must arrive
within ``idle_seconds``) and the whole call (``timeout_seconds``). A timer per read
(``asyncio.timeout_at`` around every ``anext``) costs a timer handle pushed on the loop's heap
and cancelled again for every token, and a reply is hundreds of tokens, with hundreds of
turns streaming at once: it was 8 % of a chat gateway's CPU with the instant offline model.

This clock arms one timer and moves nothing per read but a timestamp. When the timer fires it
looks at the read in progress: not yet due (the read started later than the timer was armed
for), it re-arms for the new due time; due, it cancels the reading task, and the read turns
that cancellation into a ``TimeoutError`` exactly as ``asyncio.timeout`` does (``uncancel``:
a cancellation from anyone else stays a cancellation). Between reads (the caller is busy
with an item) nothing is timed for idleness, and the deadline is checked when the next read
waits, as before.
"""

from __future__ import annotations

import asyncio

__all__ = ["ReadClock"]


class ReadClock:
    """Times the reads of one stream (see module docstring); ``close`` when the stream ends."""

    __slots__ = ("_deadline", "_expired", "_handle", "_idle", "_loop", "_read_at", "_task")

    def __init__(self, deadline: float, idle: float | None) -> None:
        """``deadline``: loop time the whole call must end by; ``idle``: seconds per read."""
        self._loop = asyncio.get_running_loop()
        self._task: asyncio.Task[object] | None = None
        self._deadline = deadline
        self._idle = idle
        self._read_at: float | None = None  # when the read in progress started
        self._expired: str | None = None
        self._handle: asyncio.TimerHandle | None = None

    @property
    def expired(self) -> str | None:
        """Why the read in progress was stopped: ``"idle"`` or ``"deadline"`` (None: it was not)."""
        return self._expired

    def start_read(self) -> None:
        """A read begins (call right before awaiting it, in the task that awaits)."""
        self._read_at = self._loop.time()
        self._task = asyncio.current_task()  # (a stream may be read by more than one task)
        if self._handle is None:
            self._handle = self._loop.call_at(self._due(self._read_at), self._check)

    def end_read(self) -> None:
        """The read ended (an item, the end, or an error)."""
        self._read_at = None

    def timed_out(self, error: asyncio.CancelledError) -> bool:
        """Whether ``error``, raised by the read, is this clock's (then it is a timeout)."""
        del error
        task = self._task
        return self._expired is not None and task is not None and task.uncancel() == 0

    def close(self) -> None:
        """The stream is over: the timer goes."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _due(self, read_at: float) -> float:
        return self._deadline if self._idle is None else min(self._deadline, read_at + self._idle)

    def _check(self) -> None:
        now = self._loop.time()
        read_at = self._read_at
        if read_at is None:  # between reads: look again once a read could be due
            due = self._due(now)
            # past the deadline, nothing to wait for: the next read arms the timer again
            self._handle = self._loop.call_at(due, self._check) if due > now else None
            return
        due = self._due(read_at)
        if now < due:
            self._handle = self._loop.call_at(due, self._check)
            return
        self._handle = None
        self._expired = "deadline" if due >= self._deadline else "idle"
        if self._task is not None:
            self._task.cancel()
