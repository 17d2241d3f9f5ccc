"""How far this node's wall clock is from the database server's (``duragent doctor``).

Session leases are timed by the *database's* clock (``now()`` in the claim and the fence,
``leases``), and ownership is decided by the epoch, so a node with a wrong clock can neither
steal a live lease nor write past a lost one. What a skewed node does get wrong is everything
it stamps or schedules with its *own* clock: event timestamps in histories (two nodes'
turns of one conversation look out of order), schedule due times (a job fires early or late on
that node), and any local estimate of when a lease it holds runs out. Hence a check, not a
guard: doctor warns at ~0.5 s and calls a few seconds an error (fix NTP).

The reading: ``clock_timestamp()`` bracketed by two local wall-clock reads; the server's time
is compared with the midpoint, and half the round trip bounds the error. The best of a few
tries (the shortest round trip) is kept, so one slow query does not read as skew.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import psycopg

from duragent.store.postgres.connection import Database

__all__ = ["ClockReading", "read_clock_skew"]


@dataclass(frozen=True, slots=True)
class ClockReading:
    """``skew``: database clock minus this node's, in seconds; ``uncertainty``: ± bound."""

    skew: float
    uncertainty: float

    @property
    def at_least(self) -> float:
        """The smallest absolute skew consistent with the reading (0 when within the bound)."""
        return max(0.0, abs(self.skew) - self.uncertainty)


def read_clock_skew(
    db: Database, *, tries: int = 3, clock: Callable[[], float] = time.time
) -> ClockReading:
    """The database clock minus ``clock`` (this node's wall clock), best of ``tries``.

    ``clock`` is a parameter only because the system clock is an OS boundary (tests shift it).
    Raises ``StorageError`` when the database cannot be asked.
    """
    best: ClockReading | None = None
    with db.transaction("reading the database clock") as conn:
        for _ in range(max(1, tries)):
            before = clock()
            row = conn.execute("SELECT clock_timestamp()").fetchone()
            after = clock()
            if row is None or not isinstance(row[0], datetime):  # pragma: no cover - server bug
                raise psycopg.DataError("clock_timestamp() returned no timestamp")
            server = row[0].timestamp()
            reading = ClockReading(server - (before + after) / 2, (after - before) / 2)
            if best is None or reading.uncertainty < best.uncertainty:
                best = reading
    assert best is not None
    return best
