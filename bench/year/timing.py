"""The simulated year's schedules: when each is due, computed here, and waiting for the last.

``Timing`` lists the ``ops`` agent's schedules (``workspace.py``) and each one's due times
from ``schedule.py``'s independent expectations (``zoneinfo`` for the daily jobs, multiples
of the interval for ``every``, multiples of 15 minutes in its window for the pulse), never
from the scheduler's own code; ``next_due`` is the clock's brake (``YearCampaign``), and
``settle`` waits, at the end, until every due time up to the clock's last reading has an
outcome in the run logs. The run logs are read through a ``store_view.StoreView``: the
workspace's files, the database, or the one then the other across a switch.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bench.year.schedule import expected_cron, expected_every
from bench.year.store_view import StoreView
from bench.year.workspace import CRON_EXPR, CRON_ZONES, PULSE_CHAT, PULSE_EVERY, TASK_CHAT

__all__ = ["DAY_MS", "START", "Timing", "expected", "runs", "settle", "timing"]

START = datetime(2026, 1, 1, tzinfo=UTC)
DAY_MS = 86_400_000
SETTLE_SECONDS = 20.0


def timing(days: float, every_seconds: int, pulse_days: int) -> Timing:
    """The schedules of a year of ``days`` from ``START``: the pulse on ``pulse_days`` days
    from the 2nd of the month in the middle of the span (where kills land)."""
    middle = START + timedelta(days=days / 2)
    pulse = None
    if pulse_days:
        first = datetime(middle.year, middle.month, 2, tzinfo=UTC)  # ``*/15 * 2-… <month> *``
        start = int(first.timestamp() * 1000)
        pulse = (start, start + pulse_days * DAY_MS)
    return Timing(every_seconds * 1000, pulse, middle.month)


@dataclass(frozen=True)
class Timing:
    """Each schedule's expected due times (module docstring)."""

    every_ms: int
    pulse: tuple[int, int] | None
    """The pulse's window [start, end) (ms), when there is one (``pulse_days``)."""
    pulse_month: int

    @property
    def names(self) -> list[str]:
        return [*CRON_ZONES, "digest", *(["pulse"] if self.pulse else [])]

    def zone(self, name: str) -> str | None:
        return CRON_ZONES[name][0] if name in CRON_ZONES else None

    def chat(self, name: str) -> int:
        if name in CRON_ZONES:
            return CRON_ZONES[name][1]
        return PULSE_CHAT if name == "pulse" else TASK_CHAT

    def dues(self, name: str, after_ms: int, until_ms: int) -> list[int]:
        """Due times in (after, until]."""
        if name in CRON_ZONES:
            minute, hour = (int(x) for x in CRON_EXPR.split()[:2])
            return expected_cron(CRON_ZONES[name][0], hour, minute, after_ms, until_ms)
        if name == "digest":
            return expected_every(self.every_ms, after_ms, until_ms)
        assert self.pulse is not None
        start, end = self.pulse  # ``*/15`` in UTC: the multiples of 15 minutes in the window
        return expected_every(PULSE_EVERY * 1000, max(after_ms, start - 1), min(until_ms, end - 1))

    def next_due(self, name: str) -> Callable[[int], int]:
        """The due time after a given one (the clock's brake, ``YearCampaign``); 2**62: none."""
        start = self.pulse[0] if self.pulse and name == "pulse" else 0

        def after(ms: int) -> int:
            dues = self.dues(name, ms, max(ms, start) + 3 * DAY_MS)
            return dues[0] if dues else 2**62

        return after


def runs(view: StoreView, name: str) -> list[dict[str, object]]:
    """The run log of the ``ops`` agent's declared schedule ``name``."""
    return view.runs(f"decl_ops_{name}")


def expected(
    view: StoreView, until_ms: int, timing: Timing
) -> dict[str, tuple[list[int], str | None]]:
    """Each schedule's due times from its first ``registered`` line up to ``until_ms``."""
    return {
        name: (timing.dues(name, _registered(runs(view, name)), until_ms), timing.zone(name))
        for name in timing.names
    }


def _registered(lines: list[dict[str, object]]) -> int:
    cursors = [int(str(e["cursor"])) for e in lines if e.get("status") == "registered"]
    return min(cursors) if cursors else 2**62


async def settle(view: StoreView, until_ms: int, timing: Timing) -> None:
    """Until every due time up to the clock's end has an outcome (or ``SETTLE_SECONDS``)."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        pending = 0
        for name, (dues, _zone) in expected(view, until_ms, timing).items():
            done = {
                e.get("due")
                for e in runs(view, name)
                if e.get("status") in ("ok", "error", "interrupted", "missed")
            }
            pending += sum(1 for d in dues if d not in done)
        if pending == 0:
            return
        await asyncio.sleep(0.2)
