"""``Schedules``: files and declared schedules loaded, broken ones reported and moved aside, the
operations' rules (future ``at``, own agent only, declared schedules not cancelled here)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from duragent.agents import load_catalog
from duragent.errors import ConfigError
from duragent.scheduler import (
    At,
    Cron,
    Destination,
    ManualClock,
    MessagePayload,
    ScheduleNotFoundError,
    ScheduleRefusedError,
    Schedules,
    declared_id,
)
from tests.scheduler.rig import START, RecordingPayloads, create

DECLARING = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: reporter
spec:
  model:
    provider: offline
    name: duragent-offline
  schedules:
    - name: daily-report
      schedule: {cron: {expr: "0 9 * * MON-FRI", tz: Europe/Berlin}}
      payload: {task: {task: "Write the daily report"}}
      destination: {gateway: telegram, chat_id: 12345}
"""


def make(tmp_path: Path, clock: ManualClock | None = None) -> Schedules:
    catalog = load_catalog(tmp_path / ".duragent" / "agents")
    return Schedules(
        tmp_path / ".duragent" / "schedules",
        agents=lambda: catalog,
        payloads=RecordingPayloads(),
        clock=clock or ManualClock(START),
    )


def test_a_declared_schedule_loads_with_a_stable_id(
    tmp_path: Path, write_agent: Callable[..., Path]
) -> None:
    write_agent("reporter", DECLARING)
    (declared,) = make(tmp_path).load()
    assert declared.id == declared_id("reporter", "daily-report") == "decl_reporter_daily-report"
    assert declared.timing == Cron("0 9 * * MON-FRI", "Europe/Berlin")
    assert declared.destination == Destination("telegram", "12345")
    assert declared.declared_in == tmp_path / ".duragent/agents/reporter/agent.yaml"


def test_a_declared_schedule_with_a_mistake_is_reported_by_agent_file_and_field(
    tmp_path: Path, write_agent: Callable[..., Path]
) -> None:
    write_agent("reporter", DECLARING.replace("0 9 * * MON-FRI", "0 9 * *"))
    schedules = make(tmp_path)
    assert schedules.load() == []
    (problem,) = schedules.problems
    assert problem.field == "spec.schedules[0].schedule.cron.expr"
    assert problem.file == tmp_path / ".duragent/agents/reporter/agent.yaml"


def test_an_unreadable_schedule_file_is_reported_skipped_and_moved_aside_with_its_reason(
    tmp_path: Path, write_agent: Callable[..., Path]
) -> None:
    write_agent("reporter")
    folder = tmp_path / ".duragent" / "schedules"
    folder.mkdir(parents=True)
    (folder / "sched_broken.yaml").write_text("id: sched_broken\nschedule: [\n")
    good = {
        "id": "sched_good",
        "agent": "reporter",
        "schedule": {"every": {"every_seconds": 60}},
        "payload": {"message": {"message": "hi"}},
        "created_at": "2026-01-01T00:00:00Z",
    }
    (folder / "sched_good.yaml").write_text(json.dumps(good))
    (folder / "sched_mismatch.yaml").write_text(json.dumps({**good, "id": "sched_other"}))
    schedules = make(tmp_path)
    assert [s.id for s in schedules.load()] == ["sched_good"]
    assert sorted(str(p.file.name) for p in schedules.problems if p.file) == [
        "sched_broken.yaml",
        "sched_mismatch.yaml",
    ]
    assert not (folder / "sched_broken.yaml").exists()
    aside = folder / "_quarantine"
    assert (aside / "sched_broken.yaml").read_text() == "id: sched_broken\nschedule: [\n"
    reason = (aside / "sched_broken.yaml.reason.txt").read_text()
    assert "sched_broken.yaml: YAML syntax error" in reason
    assert "does not match the file name" in (aside / "sched_mismatch.yaml.reason.txt").read_text()
    again = make(tmp_path)  # the next start loads the good one and still reports both
    assert [s.id for s in again.load()] == ["sched_good"]
    assert again.problems == []
    assert sorted(r["record"] for r in again.skipped()) == [
        str(aside / "sched_broken.yaml"),
        str(aside / "sched_mismatch.yaml"),
    ]


async def test_a_created_schedule_is_written_and_only_its_agent_can_cancel_it(
    tmp_path: Path, write_agent: Callable[..., Path]
) -> None:
    write_agent("reporter")
    write_agent("other")
    schedules = make(tmp_path)
    made = create(
        schedules,
        agent="reporter",
        timing=At(START + timedelta(hours=1)),
        payload=MessagePayload("hi"),
    )
    assert (tmp_path / ".duragent" / "schedules" / f"{made.id}.yaml").exists()
    with pytest.raises(ScheduleNotFoundError):
        schedules.cancel(made.id, agent="other")
    assert schedules.cancel(made.id, agent="reporter").status == "cancelled"
    again = make(tmp_path)
    assert [s.status for s in again.load()] == ["cancelled"]


def test_a_one_shot_in_the_past_is_a_bad_value_naming_its_field(
    tmp_path: Path, write_agent: Callable[..., Path]
) -> None:
    write_agent("reporter")
    with pytest.raises(ConfigError, match="must be in the future") as raised:
        make(tmp_path).new(
            agent="reporter", timing=At(START - timedelta(seconds=1)), payload=MessagePayload("x")
        )
    assert raised.value.field == "schedule.at.at"


async def test_a_declared_schedule_cannot_be_cancelled_through_the_api(
    tmp_path: Path, write_agent: Callable[..., Path]
) -> None:
    write_agent("reporter", DECLARING)
    schedules = make(tmp_path)
    await schedules.start()
    try:
        with pytest.raises(ScheduleRefusedError, match=r"remove it from spec\.schedules"):
            schedules.cancel(declared_id("reporter", "daily-report"))
    finally:
        await schedules.stop()


async def test_a_declared_schedule_first_seen_runs_only_due_times_after_that(
    tmp_path: Path, write_agent: Callable[..., Path]
) -> None:
    write_agent("reporter", DECLARING)
    clock = ManualClock(datetime(2026, 11, 24, 12, tzinfo=UTC))  # a Tuesday, after 09:00
    schedules = make(tmp_path, clock)
    await schedules.start()
    await schedules.stop()
    state = schedules.state(declared_id("reporter", "daily-report"))
    assert state.next_run_at == datetime(2026, 11, 25, 8, tzinfo=UTC)  # Wednesday 09:00 CET


async def test_only_an_active_schedule_can_be_run_now(
    tmp_path: Path, write_agent: Callable[..., Path]
) -> None:
    write_agent("reporter")
    schedules = make(tmp_path)
    made = create(
        schedules, agent="reporter", timing=Cron("0 9 * * *"), payload=MessagePayload("x")
    )
    schedules.cancel(made.id)
    with pytest.raises(ScheduleRefusedError, match="is cancelled"):
        schedules.run_now(made.id)
