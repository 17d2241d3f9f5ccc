"""One bad schedule record never stops the scheduler (issue 34, item 1), on a served workspace.

``every_seconds: 10**20`` (or ``10**12``) and ``at: 0001-01-01T00:00:00+05:00`` once passed
validation; computing their due time raised ``OverflowError``. Over HTTP that was a 500 with
the file written; after a restart the scheduler did not start, no schedule fired, ``/readyz``
said 200 and ``POST /api/v1/schedules`` kept answering 201. The clock is the scheduler's
``ManualClock``: due times come by moving it, never by waiting.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from duragent.cli.doctor import run_checks
from duragent.cli.findings import Level
from duragent.config import load_workspace
from duragent.runtime import Runtime
from duragent.scheduler import ManualClock
from tests.gateways.http.api_fixtures import served, write_workspace
from tests.polling import eventually
from tests.scheduler.rig import START

PROBLEM = "application/problem+json"
EVERY = {"agent": "bot", "payload": {"message": {"message": "stand-up in 5 minutes"}}}
BAD_TIMINGS: list[tuple[dict[str, Any], str, object]] = [
    ({"every": {"every_seconds": 10**20}}, "schedule.every.every_seconds", str(10**20)),
    ({"every": {"every_seconds": 10**12}}, "schedule.every.every_seconds", 10**12),
    ({"at": {"at": "0001-01-01T00:00:00+05:00"}}, "schedule.at.at", "0001-01-01T00:00:00+05:00"),
]


def stored(root: Path, sched_id: str, timing: dict[str, Any]) -> None:
    """A schedule file put on disk directly, as a person or an older server may leave it."""
    folder = root / ".duragent" / "schedules"
    folder.mkdir(parents=True, exist_ok=True)
    doc = {**EVERY, "id": sched_id, "schedule": timing, "created_at": "2026-01-01T00:00:00Z"}
    (folder / f"{sched_id}.yaml").write_text(json.dumps(doc))


@asynccontextmanager
async def serving(root: Path, clock: ManualClock) -> AsyncIterator[httpx.AsyncClient]:
    """The real runtime on ``root`` with the scheduler on ``clock`` (messages need no model)."""
    runtime = Runtime(load_workspace(root), port=0, clock=clock)
    await runtime.start()
    try:
        url = f"http://127.0.0.1:{runtime.http_port}"
        async with httpx.AsyncClient(base_url=url, timeout=120) as client:
            yield client
    finally:
        await runtime.aclose()


async def fires(client: httpx.AsyncClient, clock: ManualClock, sched_id: str) -> None:
    """Move the clock past the schedule's next due time and see that run end ``ok``."""
    before = (await client.get(f"/api/v1/schedules/{sched_id}")).json()
    runs = len(before["runs"])
    clock.advance(60)

    async def ran() -> bool:
        one = (await client.get(f"/api/v1/schedules/{sched_id}")).json()
        return any(r["status"] == "ok" for r in one["runs"][runs:])

    assert await eventually(ran), before


@pytest.mark.parametrize(("timing", "field", "value"), BAD_TIMINGS)
async def test_a_timing_out_of_range_is_a_400_naming_field_value_and_range_and_nothing_is_written(
    tmp_path: Path, timing: dict[str, Any], field: str, value: object
) -> None:
    async with served(tmp_path) as s:
        answer = await s.client.post("/api/v1/schedules", json={**EVERY, "schedule": timing})
        assert answer.status_code == 400, answer.text
        assert answer.headers["content-type"] == PROBLEM
        problem = answer.json()
        assert problem["field"] == field
        assert problem["value"] == value
        assert field in problem["detail"]
        range_of = "1 to 315,360,000 seconds" if "every" in field else "from 1970-01-01"
        assert range_of in problem["detail"]
        if "every" in field:
            assert problem["allowed"] == "1 to 315,360,000 seconds (3,650 days)"
        assert (await s.client.get("/api/v1/schedules")).json()["schedules"] == []
        assert "services" not in (await s.client.get("/readyz")).json()  # the scheduler runs
    assert list((tmp_path / ".duragent" / "schedules").glob("*.yaml")) == []


async def test_a_bad_schedule_file_is_moved_aside_and_every_other_schedule_fires_after_restarts(
    tmp_path: Path,
) -> None:
    write_workspace(tmp_path, "http://127.0.0.1:9/v1")
    stored(tmp_path, "sched_good", {"every": {"every_seconds": 60}})
    for i, (timing, _, _) in enumerate(BAD_TIMINGS):
        stored(tmp_path, f"sched_bad{i}", timing)
    folder = tmp_path / ".duragent" / "schedules"
    aside = folder / "_quarantine"
    clock = ManualClock(START + timedelta(seconds=30))
    for _ in range(2):  # the second start finds only the good file, and still reports the bad
        async with serving(tmp_path, clock) as client:
            ready = await client.get("/readyz")
            assert "services" not in ready.json(), ready.text  # nothing down: reported only
            skipped = ready.json()["skipped_records"]["schedules"]
            assert sorted(r["moved_to"] for r in skipped) == [
                str(aside / f"sched_bad{i}.yaml") for i in range(3)
            ]
            assert any("schedule.every.every_seconds" in r["reason"] for r in skipped)
            assert any("schedule.at.at" in r["reason"] for r in skipped)
            listed = (await client.get("/api/v1/schedules")).json()["schedules"]
            assert [s["id"] for s in listed if not s["id"].startswith("sched_0")] == ["sched_good"]
            await fires(client, clock, "sched_good")
            made = await client.post(
                "/api/v1/schedules", json={**EVERY, "schedule": {"every": {"every_seconds": 60}}}
            )
            assert made.status_code == 201, made.text
            await fires(client, clock, made.json()["id"])
        assert sorted(p.name for p in folder.glob("sched_bad*")) == []
        assert sorted(p.name for p in aside.glob("*.yaml")) == [
            f"sched_bad{i}.yaml" for i in range(3)
        ]
        reason = (aside / "sched_bad0.yaml.reason.txt").read_text()
        assert "sched_bad0.yaml: schedule.every.every_seconds: is out of range" in reason
    doctor = [f for f in run_checks(tmp_path / "duragent.yaml") if f.check == "schedules"]
    moved = [f for f in doctor if "moved aside by the server" in f.message]
    assert len(moved) == 3
    assert all(f.level is Level.ERROR for f in moved)


async def test_a_scheduler_that_did_not_start_fails_readyz_and_refuses_new_schedules_with_503(
    tmp_path: Path,
) -> None:
    write_workspace(tmp_path, "http://127.0.0.1:9/v1")
    stored(tmp_path, "sched_good", {"every": {"every_seconds": 60}})
    # its run log cannot be read (a folder where the file should be): the loop cannot know
    # what already ran, so the scheduler does not start
    (tmp_path / ".duragent" / "schedules" / "runs" / "sched_good.jsonl").mkdir(parents=True)
    async with serving(tmp_path, ManualClock(START)) as client:
        ready = await client.get("/readyz")
        assert ready.status_code == 503, ready.text
        assert ready.headers["content-type"] == PROBLEM
        assert "service scheduler cannot run" in ready.json()["detail"]
        assert ready.json()["services"]["scheduler"].startswith("down: ")
        assert "IsADirectoryError" in ready.json()["services"]["scheduler"]
        made = await client.post(
            "/api/v1/schedules", json={**EVERY, "schedule": {"every": {"every_seconds": 60}}}
        )
        assert made.status_code == 503, made.text
        assert made.headers["content-type"] == PROBLEM
        assert "the scheduler did not start" in made.json()["detail"]
        assert (await client.post("/api/v1/schedules/sched_good/run")).status_code in (404, 503)
        assert (await client.get("/livez")).text == "ok"
    assert [p.name for p in (tmp_path / ".duragent" / "schedules").glob("*.yaml")] == [
        "sched_good.yaml"
    ]


DECLARED = """\
  schedules:
    - name: minutely
      schedule: {every: {every_seconds: 60}}
      payload: {message: {message: "tick"}}
    - name: never
      schedule: {every: {every_seconds: 100000000000000000000}}
      payload: {message: {message: "tock"}}
    - name: long-ago
      schedule: {at: {at: "0001-01-01T00:00:00+05:00"}}
      payload: {message: {message: "tock"}}
"""


async def test_a_declared_schedule_out_of_range_is_skipped_and_reported_and_the_rest_fire(
    tmp_path: Path,
) -> None:
    write_workspace(tmp_path, "http://127.0.0.1:9/v1", tools=DECLARED)
    agent_yaml = tmp_path / ".duragent" / "agents" / "bot" / "agent.yaml"
    clock = ManualClock(START + timedelta(seconds=30))
    async with serving(tmp_path, clock) as client:
        ready = (await client.get("/readyz")).json()
        assert "services" not in ready
        reasons = [r["reason"] for r in ready["skipped_records"]["schedules"]]
        assert reasons == [
            f"{agent_yaml}: spec.schedules[1].schedule.every.every_seconds: is out of range "
            "(got 100000000000000000000; allowed: 1 to 315,360,000 seconds (3,650 days)). "
            "Fix: give an interval of at least one second and at most 3,650 days; for "
            "something rarer, use a cron expression or a one-shot 'at'",
            f"{agent_yaml}: spec.schedules[2].schedule.at.at: is out of range (got "
            "'0001-01-01T00:00:00+05:00'; allowed: from 1970-01-01T00:00:00Z to before "
            "9000-01-01T00:00:00Z). Fix: write it like 2026-12-01T09:00:00Z or "
            "2026-12-01T09:00:00+01:00",
        ]
        listed = (await client.get("/api/v1/schedules")).json()["schedules"]
        assert [s["id"] for s in listed] == ["decl_bot_minutely"]
        await fires(client, clock, "decl_bot_minutely")
    # nothing of the skipped ones was written (no file, no run log), and doctor names them
    runs = tmp_path / ".duragent" / "schedules" / "runs"
    assert sorted(p.name for p in runs.iterdir()) == ["decl_bot_minutely.jsonl"]
    doctor = [f.message for f in run_checks(tmp_path / "duragent.yaml") if f.check == "schedules"]
    assert any(
        "spec.schedules[1].schedule.every.every_seconds: is out of range" in m for m in doctor
    )
    assert any("spec.schedules[2].schedule.at.at: is out of range" in m for m in doctor)
