"""Declared schedules as agent files change: a run in progress, a schedule declared again.

The loop alone (``Scheduler``) with a payload held open, so a run is in progress while its
schedule is removed (a reload of the agents) or declared again; then ``Schedules`` across a
restart, with a catalog the test swaps as a reload does.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from duragent.agents import AgentCatalog, load_catalog
from duragent.scheduler import Every, ManualClock, Schedules
from duragent.scheduler.loading import DECLARED_EPOCH
from duragent.scheduler.model import Schedule
from duragent.scheduler.service import Record, RunReport, Scheduler
from duragent.store.schedule_files import RunLogFiles
from tests.polling import eventually
from tests.scheduler.rig import START, RecordingPayloads, schedule

TICK = "decl_helper_tick"
MINUTE = timedelta(minutes=1)


@dataclass
class HeldPayloads:
    """A payload runner whose runs wait until the test lets them end."""

    runs: list[tuple[str, datetime]] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(
        self, schedule: Schedule, due: datetime, record: Record, attempt: int = 1
    ) -> RunReport:
        self.runs.append((schedule.id, due))
        await self.release.wait()
        return RunReport()


def declared(tmp_path: Path) -> Schedule:
    """Every minute, as ``spec.schedules`` of agent ``helper`` declares it."""
    made = schedule(TICK, Every(60), created=DECLARED_EPOCH)
    return replace(made, declared_in=tmp_path / "agent.yaml")


def statuses(tmp_path: Path) -> list[str]:
    return [line["status"] for line in lines(tmp_path)]


def lines(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "runs" / f"{TICK}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


async def running(tmp_path: Path) -> tuple[Scheduler, ManualClock, HeldPayloads]:
    """The loop with the declared schedule's first due time started and held open."""
    clock = ManualClock(START + timedelta(seconds=30))
    payloads = HeldPayloads()
    scheduler = Scheduler(RunLogFiles(tmp_path / "runs"), payloads, clock)
    scheduler.put(declared(tmp_path))
    clock.set(START + MINUTE)
    assert scheduler.tick() == 1
    assert await eventually(lambda: len(payloads.runs) == 1)
    return scheduler, clock, payloads


async def test_a_run_in_progress_of_a_removed_schedule_finishes_and_none_starts_again(
    tmp_path: Path,
) -> None:
    scheduler, clock, payloads = await running(tmp_path)
    scheduler.remove(TICK)
    assert scheduler.get(TICK) is None
    for minutes in (2, 3, 4):
        clock.set(START + minutes * MINUTE)
        assert scheduler.tick() == 0
    payloads.release.set()
    await scheduler.drain()
    assert payloads.runs == [(TICK, START + MINUTE)]
    assert statuses(tmp_path) == ["registered", "running", "removed", "ok"]
    assert scheduler.next_wake() is None


async def test_the_server_stopping_interrupts_a_run_of_a_removed_schedule_too(
    tmp_path: Path,
) -> None:
    scheduler, _, _ = await running(tmp_path)
    scheduler.remove(TICK)
    await scheduler.stop()  # returns: the held run was cancelled with the rest
    assert statuses(tmp_path) == ["registered", "running", "removed", "interrupted"]


async def test_a_schedule_declared_again_during_its_run_is_not_taken_for_interrupted(
    tmp_path: Path,
) -> None:
    scheduler, clock, payloads = await running(tmp_path)
    scheduler.remove(TICK)
    clock.set(START + 2 * MINUTE + timedelta(seconds=30))
    scheduler.put(declared(tmp_path))  # the run is still going: it is neither run again
    assert scheduler.tick() == 0  # nor recorded interrupted
    payloads.release.set()
    await scheduler.drain()
    assert statuses(tmp_path) == ["registered", "running", "removed", "registered", "ok"]
    assert lines(tmp_path)[3]["reason"] == "declared again"
    # its due times from the new registration on: 00:03, not 00:02 (it was removed then)
    assert scheduler.next_wake() == START + 3 * MINUTE


DECLARING = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: helper
spec:
  model:
    provider: offline
    name: duragent-offline
  schedules:
    - name: tick
      schedule: {every: {every_seconds: 60}}
      payload: {message: {message: "tick"}}
"""


async def test_a_schedule_declared_again_after_a_restart_runs_only_from_then(
    tmp_path: Path, write_agent: Callable[..., Path]
) -> None:
    folder = write_agent("helper", DECLARING)
    catalog = [load_catalog(tmp_path / ".duragent" / "agents")]
    clock = ManualClock(START + timedelta(seconds=30))

    def node() -> tuple[Schedules, RecordingPayloads]:
        payloads = RecordingPayloads()
        made = Schedules(
            tmp_path / "schedules", agents=lambda: catalog[0], payloads=payloads, clock=clock
        )
        return made, payloads

    first, _ = node()
    await first.start()
    catalog[0] = AgentCatalog()  # the agent file no longer declares it; reloaded
    assert await first.take_declared() is None
    await first.stop()
    clock.set(START + 10 * MINUTE + timedelta(seconds=30))  # declared again, then a restart
    (folder / "agent.yaml").write_text(DECLARING)
    catalog[0] = load_catalog(tmp_path / ".duragent" / "agents")
    second, payloads = node()
    await second.start()
    try:
        assert second.state(TICK).next_run_at == START + 11 * MINUTE  # nothing of the 10
        clock.set(START + 11 * MINUTE)
        assert await eventually(lambda: payloads.runs == [(TICK, START + 11 * MINUTE)])
    finally:
        await second.stop()
    runs = json.loads("[" + ",".join(
        (tmp_path / "schedules" / "runs" / f"{TICK}.jsonl").read_text().splitlines()
    ) + "]")  # fmt: skip
    assert [r["status"] for r in runs][:3] == ["registered", "removed", "registered"]
    assert "missed" not in [r["status"] for r in runs]
