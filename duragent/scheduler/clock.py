"""The scheduler's time: the wall clock in production, a hand-moved one in tests.

Everything that reads the time or waits goes through a ``Clock``, so a test can run a
simulated year in seconds: ``ManualClock.advance`` moves time and wakes whoever waits.
Waits on the system clock are cut into slices of at most a minute, so a wall-clock jump
(NTP, a suspended laptop) is noticed within a minute rather than after a long sleep.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime, timedelta
from typing import Protocol

__all__ = ["Clock", "ManualClock", "SystemClock"]

_SLICE_SECONDS = 60.0


class Clock(Protocol):
    """Now, and waiting (see module docstring)."""

    def now(self) -> datetime:
        """The current time (aware, UTC)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (a retry's backoff)."""
        ...

    async def wait_until(self, when: datetime | None, wake: asyncio.Event) -> None:
        """Return at ``when`` (never if None), or earlier once ``wake`` is set."""
        ...


class SystemClock:
    """The machine's clock."""

    def now(self) -> datetime:
        """``datetime.now(UTC)``."""
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        """``asyncio.sleep``."""
        await asyncio.sleep(seconds)

    async def wait_until(self, when: datetime | None, wake: asyncio.Event) -> None:
        """Wait in slices of at most a minute, re-reading the wall clock after each."""
        while not wake.is_set():
            left = _SLICE_SECONDS if when is None else (when - self.now()).total_seconds()
            if left <= 0:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), min(left, _SLICE_SECONDS))


class ManualClock:
    """A clock that moves only when told to (tests, the simulated-year benchmark)."""

    def __init__(self, start: datetime) -> None:
        self._now = start.astimezone(UTC)
        self._moved = asyncio.Event()

    def now(self) -> datetime:
        """The time it was last set to."""
        return self._now

    def set(self, when: datetime) -> None:
        """Move to ``when`` (never backwards) and wake every waiter to look again."""
        self._now = max(self._now, when.astimezone(UTC))
        self._moved.set()
        self._moved = asyncio.Event()

    def advance(self, seconds: float) -> None:
        """Move forward by ``seconds``."""
        self.set(self._now + timedelta(seconds=seconds))

    async def sleep(self, seconds: float) -> None:
        """A backoff takes no real time: the clock moves forward by it."""
        self.advance(seconds)
        await asyncio.sleep(0)

    async def wait_until(self, when: datetime | None, wake: asyncio.Event) -> None:
        """Return once the clock reaches ``when`` or ``wake`` is set."""
        while not wake.is_set() and (when is None or self._now < when):
            moved = asyncio.ensure_future(self._moved.wait())
            woken = asyncio.ensure_future(wake.wait())
            try:
                await asyncio.wait({moved, woken}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                moved.cancel()
                woken.cancel()
