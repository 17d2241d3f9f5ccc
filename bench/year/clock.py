"""The simulated year's clock, shared by the benchmark and the ``duragent serve`` it kills.

The serving process is a real child (SIGKILL must be a real crash), so the simulated time
cannot be a ``ManualClock`` in the benchmark's memory. It is 8 bytes in a file both processes
map: the benchmark (``ClockDriver``) writes the simulated Unix time in milliseconds, the
serving process reads it (``FileClock``): its scheduler and TTL sweep as their
``duragent.scheduler.Clock``, everything that stamps or compares a time (events, ``updated_at``
and TTL expiry, the memory tool's "today", the chatter buffer's age) as its calendar. Time
moves only when the benchmark moves it, and it does not move while the serving process is
down, so a restart is not a jump of hours that the scheduler would (rightly) coalesce.

Waits poll the file every ``POLL_SECONDS`` of real time; the benchmark moves the clock in
steps small enough that no two due times of one schedule fall into one step.
"""

from __future__ import annotations

import asyncio
import contextlib
import mmap
import struct
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["POLL_SECONDS", "ClockDriver", "FileClock"]

POLL_SECONDS = 0.01
_FORMAT = "<q"
_SIZE = struct.calcsize(_FORMAT)


class ClockDriver:
    """The benchmark's side: owns the file and moves the time (never backwards)."""

    def __init__(self, path: Path, start: datetime) -> None:
        self.path = path
        path.write_bytes(struct.pack(_FORMAT, int(start.timestamp() * 1000)))
        self._file = path.open("r+b")
        self._map = mmap.mmap(self._file.fileno(), _SIZE)
        self._ms = int(start.timestamp() * 1000)

    @property
    def ms(self) -> int:
        """The simulated time, Unix milliseconds."""
        return self._ms

    def now(self) -> datetime:
        return datetime.fromtimestamp(self._ms / 1000, UTC)

    def set_ms(self, ms: int) -> None:
        """Move to ``ms`` (ignored when it is not later)."""
        if ms > self._ms:
            self._ms = ms
            self._map[:_SIZE] = struct.pack(_FORMAT, ms)

    def close(self) -> None:
        self._map.close()
        self._file.close()


class FileClock:
    """The serving process's side: the scheduler's ``Clock`` over the shared file."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("rb")
        self._map = mmap.mmap(self._file.fileno(), _SIZE, access=mmap.ACCESS_READ)

    def _ms(self) -> int:
        value: int = struct.unpack(_FORMAT, self._map[:_SIZE])[0]
        return value

    def now(self) -> datetime:
        """The simulated time the benchmark last wrote."""
        return datetime.fromtimestamp(self._ms() / 1000, UTC)

    def seconds(self) -> float:
        """The same, in Unix seconds (the process's calendar: ``duragent.core.clock``)."""
        return self._ms() / 1000

    async def sleep(self, seconds: float) -> None:
        """A retry's backoff: until the simulated time has moved ``seconds`` (or 1 s real)."""
        until = self._ms() + int(seconds * 1000)
        for _ in range(int(1 / POLL_SECONDS)):
            if self._ms() >= until:
                return
            await asyncio.sleep(POLL_SECONDS)

    async def wait_until(self, when: datetime | None, wake: asyncio.Event) -> None:
        """Poll the file until ``when`` or until ``wake`` is set."""
        limit = None if when is None else int(when.timestamp() * 1000)
        while not wake.is_set() and (limit is None or self._ms() < limit):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), POLL_SECONDS)
