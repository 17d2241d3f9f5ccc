"""``/api/v1/schedules`` on a served workspace: the file format in, state and runs out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from duragent.testing import Reply
from tests.gateways.http.api_fixtures import served
from tests.polling import eventually

PROBLEM = "application/problem+json"
DAILY = {
    "agent": "bot",
    "schedule": {"cron": {"expr": "0 9 * * MON-FRI", "tz": "Europe/Berlin"}},
    "payload": {"task": {"task": "Summarise yesterday"}},
}


async def test_a_schedule_is_created_listed_read_and_cancelled(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        made = await s.client.post("/api/v1/schedules", json=DAILY)
        assert made.status_code == 201
        sched = made.json()
        assert sched["id"].startswith("sched_")
        assert sched["status"] == "active"
        assert sched["next_run_at"] is not None
        assert (tmp_path / ".duragent" / "schedules" / f"{sched['id']}.yaml").exists()
        listed = (await s.client.get("/api/v1/schedules", params={"agent": "bot"})).json()
        assert [x["id"] for x in listed["schedules"]] == [sched["id"]]
        one = (await s.client.get(f"/api/v1/schedules/{sched['id']}")).json()
        assert one["runs"] == []
        gone = await s.client.delete(f"/api/v1/schedules/{sched['id']}")
        assert gone.json()["status"] == "cancelled"
        assert gone.json()["next_run_at"] is None


async def test_run_now_runs_a_task_in_a_session_of_its_own_that_http_can_read(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        s.server.enqueue(Reply(text="3 tickets closed."))
        sched = (await s.client.post("/api/v1/schedules", json=DAILY)).json()
        started = await s.client.post(f"/api/v1/schedules/{sched['id']}/run")
        assert started.status_code == 202

        async def ran() -> bool:
            one = (await s.client.get(f"/api/v1/schedules/{sched['id']}")).json()
            return one["last_status"] == "ok"

        assert await eventually(ran)
        runs = (await s.client.get(f"/api/v1/schedules/{sched['id']}")).json()["runs"]
        session_id = runs[-1]["session_id"]
        history = (await s.client.get(f"/api/v1/sessions/{session_id}/messages")).json()
        assert "[Scheduled Task]" in str(history)
        assert "3 tickets closed." in str(history)


async def test_a_bad_field_is_a_problem_naming_it(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        bad = {**DAILY, "schedule": {"cron": {"expr": "0 9 * *"}}}
        answer = await s.client.post("/api/v1/schedules", json=bad)
        assert answer.status_code == 400
        assert answer.headers["content-type"] == PROBLEM
        assert "schedule.cron.expr" in answer.json()["detail"]
        past = datetime.now(UTC) - timedelta(hours=1)
        late = {**DAILY, "schedule": {"at": {"at": past.isoformat()}}}
        answer = await s.client.post("/api/v1/schedules", json=late)
        assert answer.status_code == 400  # a bad value, as the cron above: not a refusal
        assert "must be in the future" in answer.json()["detail"]
        assert answer.json()["field"] == "schedule.at.at"
        assert (await s.client.get("/api/v1/schedules/sched_nope")).status_code == 404
