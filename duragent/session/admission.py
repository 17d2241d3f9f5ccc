"""A first-come, first-served limit on asks in flight, for one event loop.

``asyncio.Semaphore`` plus ``asyncio.wait_for`` for the timeout costs a task, a timer and
several loop hops per waiting ask; at 1,000 busy sessions most asks wait, and that was the
largest cost on the loop thread (profiled). Here a waiter is one future in a deque; a permit
is handed straight to the oldest waiter, so nobody can overtake it.
"""

from __future__ import annotations

import asyncio
from collections import deque

from duragent.session.bridge import loop_deadlines
from duragent.session.deadlines import Deadlines

__all__ = ["Admission"]


class Admission:
    """At most ``limit`` holders at once; ``enter`` waits (bounded), ``leave`` hands over."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("the admission limit must be at least 1")
        self.limit = limit
        self._free = limit
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def in_use(self) -> int:
        """Permits currently held."""
        return self.limit - self._free

    def try_enter(self) -> bool:
        """Take a permit if one is free and nobody is waiting (no await on the fast path)."""
        if self._free and not self._waiters:
            self._free -= 1
            return True
        return False

    async def enter(self, within: float) -> None:
        """Take a permit, waiting at most ``within`` seconds (``SessionTimeoutError``)."""
        if self.try_enter():
            return
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append(waiter)
        entry = loop_deadlines(loop).watch(waiter, within, _NO_CAPACITY, within, self.limit)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self.leave()  # granted, but the caller is gone: pass it on
            raise
        finally:
            Deadlines.done(entry)

    def leave(self) -> None:
        """Return a permit: to the oldest live waiter, or to the pool."""
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._free += 1


_NO_CAPACITY = "no session capacity within {:g}s ({} asks in flight)"
