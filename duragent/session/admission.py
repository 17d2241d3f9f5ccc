"""A first-come, first-served limit on asks in flight, for one event loop.

``asyncio.Semaphore`` plus ``asyncio.wait_for`` for the timeout costs a task, a timer and
several loop hops per waiting ask; at 1,000 busy sessions most asks wait, and that was the
largest cost on the loop thread (profiled). Here a waiter is one future in a deque; a freed
permit goes straight to the oldest waiter, so nobody can overtake it.

The limit is fixed, or *adaptive*: what must stay bounded is the number of actor threads
running Python at once (they convoy on the GIL and stall the loop), not the number waiting on
the disk. ``AskMix`` averages how an ask's time on its actor splits between the disk and
everything else; with ``R`` runnable asks wanted, ``R × (1 + disk / other)`` asks may be in
flight. Measured (bench/sessions.py, 1,000 sessions): with this VM's 0.08 ms fsync the best
limit is 8 (16 doubles the p99 stall); with a simulated 3.6 ms fsync, 8 caps throughput at
~840 turns/s, 32 gives ~3,000/s at a 2.2 ms p99 stall, 64 stalls ~10 ms, 128 47 ms.
``R = 0.5`` within [8, 32] picks 8 and ~28–33 for these two disks. Slower Python (GIL
contention) raises "other" and lowers the limit: the feedback is the right way round.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable

from duragent.session.bridge import loop_deadlines
from duragent.session.deadlines import Deadlines

__all__ = ["RUNNABLE_TARGET", "AskAdmission", "AskMix"]

RUNNABLE_TARGET = 0.5
"""Asks wanted running Python at once under an adaptive limit (module docstring)."""


class AskMix:
    """How asks spend their time on actor threads: waiting on the disk, or not (averaged).

    Written by every actor thread without a lock: each update is a few float operations under
    the GIL, and an update lost to a race only makes the average a little slower to move.
    """

    __slots__ = ("disk", "other")

    WEIGHT = 0.05
    """Weight of the newest ask in the moving averages (about the last 20 asks count)."""

    def __init__(self) -> None:
        self.disk = 0.0
        self.other = 1e-4

    def observe(self, disk_seconds: float, total_seconds: float) -> None:
        """One ask took ``total_seconds`` on its actor, ``disk_seconds`` of them in I/O."""
        w = self.WEIGHT
        self.disk += w * (disk_seconds - self.disk)
        self.other += w * (max(total_seconds - disk_seconds, 1e-6) - self.other)

    def limit(self, low: int, high: int) -> int:
        """Asks in flight that keep about ``RUNNABLE_TARGET`` of them runnable."""
        wanted = round(RUNNABLE_TARGET * (1.0 + self.disk / self.other))
        return max(low, min(high, wanted))


class AskAdmission:
    """At most ``limit`` holders at once; ``enter`` waits (bounded), ``leave`` hands over."""

    def __init__(self, limit: int, *, high: int | None = None, mix: AskMix | None = None) -> None:
        """A fixed ``limit``, or with ``mix`` an adaptive one between ``limit`` and ``high``."""
        if limit < 1:
            raise ValueError("the admission limit must be at least 1")
        self._low = limit
        self._high = max(limit, high if high is not None else limit)
        self._mix = mix
        self._in_use = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self.on_wait: Callable[[float], None] | None = None
        """Told how long each ask that had to wait waited (the metrics); not the fast path."""

    @property
    def limit(self) -> int:
        """Asks allowed in flight now."""
        mix = self._mix
        return self._low if mix is None else mix.limit(self._low, self._high)

    @property
    def waiting(self) -> int:
        """Asks queued for a permit now."""
        return len(self._waiters)

    @property
    def in_use(self) -> int:
        """Permits currently held."""
        return self._in_use

    def try_enter(self) -> bool:
        """Take a permit if one is free and nobody is waiting (no await on the fast path)."""
        if not self._waiters and self._in_use < self.limit:
            self._in_use += 1
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
        began = time.perf_counter()
        try:
            await waiter
            if self.on_wait is not None:
                self.on_wait(time.perf_counter() - began)
        except BaseException:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self.leave()  # granted, but the caller is gone: pass it on
            else:
                with contextlib.suppress(ValueError):  # timed out or cancelled while queued
                    self._waiters.remove(waiter)
            raise
        finally:
            Deadlines.done(entry)

    def leave(self) -> None:
        """Return a permit; admit the oldest live waiters while the limit allows."""
        self._in_use -= 1
        waiters = self._waiters
        if not waiters:
            return
        limit = self.limit
        while waiters and self._in_use < limit:
            waiter = waiters.popleft()
            if not waiter.done():
                self._in_use += 1
                waiter.set_result(None)


_NO_CAPACITY = "no session capacity within {:g}s ({} asks in flight)"
