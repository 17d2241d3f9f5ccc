"""Shared pieces of the scheduler's tests: payloads that record what ran, schedules to build."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from duragent.scheduler.clock import ManualClock
from duragent.scheduler.front import Schedules
from duragent.scheduler.model import Cron, MessagePayload, Schedule, Timing
from duragent.scheduler.service import Record, RunReport, Scheduler, SchedulerSettings
from duragent.store.schedule_files import RunLogFiles

START = datetime(2026, 1, 1, tzinfo=UTC)
DAILY_AT_NINE = Cron("0 9 * * *")


@dataclass
class RecordingPayloads:
    """A payload runner that remembers every (schedule, due) it ran; fails while told to."""

    runs: list[tuple[str, datetime]] = field(default_factory=list)
    attempts: list[int] = field(default_factory=list)  # each run's attempt, beside ``runs``
    failures_left: int = 0

    async def run(
        self, schedule: Schedule, due: datetime, record: Record, attempt: int = 1
    ) -> RunReport:
        self.runs.append((schedule.id, due))
        self.attempts.append(attempt)
        if self.failures_left:
            self.failures_left -= 1
            return RunReport(error="the chat was unreachable")
        return RunReport()

    def doubles(self) -> list[tuple[str, datetime]]:
        return [run for run, n in Counter(self.runs).items() if n > 1]


def schedule(
    sched_id: str, timing: Timing = DAILY_AT_NINE, *, created: datetime = START, **kw: object
) -> Schedule:
    return Schedule(
        id=sched_id,
        agent="helper",
        timing=timing,
        payload=MessagePayload("stand-up in 5 minutes"),
        created_at=created,
        **kw,  # type: ignore[arg-type]
    )


def make_scheduler(
    tmp_path: Path,
    clock: ManualClock,
    payloads: RecordingPayloads,
    settings: SchedulerSettings | None = None,
    *,
    sync: bool = False,
) -> Scheduler:
    return Scheduler(RunLogFiles(tmp_path / "runs", sync=sync), payloads, clock, settings)


async def run_until(scheduler: Scheduler, clock: ManualClock, end: datetime) -> None:
    """Step the clock from due time to due time (as the loop would sleep) up to ``end``."""
    while True:
        scheduler.tick()
        await scheduler.drain()
        wake = scheduler.next_wake()
        if wake is None or wake > end:
            clock.set(end)
            scheduler.tick()
            await scheduler.drain()
            return
        clock.set(wake)


def create(schedules: Schedules, **fields: Any) -> Schedule:
    """A new schedule written and handed to the loop (what the HTTP API and the tool do)."""
    return schedules.add(schedules.new(**fields))
