"""Timeouts for many futures of one event loop, kept by a single timer.

Asks (and asks waiting for admission) share a timeout, so their deadlines arrive in order:
each one appends an entry, one timer is armed for the oldest, and finished entries are dropped
from the front. A timer per ask (``call_later`` + ``cancel``: a handle, a heap push and a
later heap clean-up) was ~10 µs of loop time each, on every durable write. A deadline earlier
than the newest one gets its own timer, since the queue's order would otherwise break.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

__all__ = ["Deadlines"]


class Deadlines:
    """Fail watched futures with ``error(message)`` when their time is up."""

    __slots__ = ("_entries", "_error", "_loop", "_timer")

    def __init__(self, loop: asyncio.AbstractEventLoop, error: type[BaseException]) -> None:
        self._loop = loop
        self._error = error
        # [when, future | None, template, args]; future None = finished
        self._entries: deque[list[Any]] = deque()
        self._timer: asyncio.TimerHandle | None = None

    def watch(
        self, future: asyncio.Future[Any], within: float, template: str, *args: Any
    ) -> list[Any] | None:
        """Fail ``future`` after ``within`` s with ``template.format(*args)``.

        Returns the handle to pass to ``done`` when the future is settled another way.
        """
        when = self._loop.time() + within
        entries = self._entries
        while entries and entries[0][1] is None:
            entries.popleft()
        if entries and when < entries[-1][0]:
            own = self._loop.call_at(when, self._expire, future, template, args)
            future.add_done_callback(lambda _: own.cancel())
            return None
        entry = [when, future, template, args]
        entries.append(entry)
        armed = self._timer
        if armed is None or armed.when() > when:  # none armed, or armed for a finished one
            if armed is not None:
                armed.cancel()
            self._timer = self._loop.call_at(when, self._fire)
        return entry

    @staticmethod
    def done(entry: list[Any] | None) -> None:
        """The future was settled: forget it (its entry goes when it reaches the front)."""
        if entry is not None:
            entry[1] = None

    def _fire(self) -> None:
        self._timer = None
        now = self._loop.time()
        entries = self._entries
        while entries:
            when, future, template, args = entries[0]
            if future is not None and when > now:
                self._timer = self._loop.call_at(when, self._fire)
                return
            entries.popleft()
            if future is not None:
                self._expire(future, template, args)

    def _expire(self, future: asyncio.Future[Any], template: str, args: tuple[Any, ...]) -> None:
        if not future.done():
            future.set_exception(self._error(template.format(*args)))
