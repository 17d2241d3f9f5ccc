"""The ``ScheduleStorage`` and ``RunLogStorage`` contract, for files and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from duragent.store.protocols import RunLogStorage, ScheduleStorage
from duragent.store.schedule_files import RunLogFiles, ScheduleFiles


@pytest.fixture(params=["files", "postgres"])
def stores(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[ScheduleStorage, RunLogStorage]]:
    if request.param == "files":
        yield ScheduleFiles(tmp_path / "schedules"), RunLogFiles(tmp_path / "schedules" / "runs")
        return
    from duragent.store.postgres import PostgresRunLog, PostgresSchedules, migrate
    from tests.store import postgres_db

    with postgres_db.fresh_schema() as schema, postgres_db.database(schema) as db:
        db.open()
        migrate(db)
        yield PostgresSchedules(db), PostgresRunLog(db)


SCHEDULE: dict[str, Any] = {
    "agent": "assistant",
    "schedule": {"cron": {"expr": "0 9 * * *", "tz": "Europe/Berlin"}},
    "task": "Say good morning ☀",
    "destination": {"gateway": "telegram", "chat_id": "42"},
}


def test_a_schedule_is_stored_replaced_listed_and_removed(
    stores: tuple[ScheduleStorage, RunLogStorage],
) -> None:
    schedules, _ = stores
    assert schedules.ids() == []
    assert schedules.get("daily") is None
    schedules.put("daily", SCHEDULE)
    schedules.put("b-first", {**SCHEDULE, "task": "other"})
    assert schedules.get("daily") == SCHEDULE
    schedules.put("daily", {**SCHEDULE, "task": "changed"})
    assert (schedules.get("daily") or {})["task"] == "changed"
    assert schedules.ids() == ["b-first", "daily"]
    schedules.remove("daily")
    schedules.remove("daily")  # missing is fine
    assert schedules.ids() == ["b-first"]


def test_an_id_that_is_not_a_safe_name_is_refused(
    stores: tuple[ScheduleStorage, RunLogStorage],
) -> None:
    schedules, runs = stores
    with pytest.raises(ValueError, match="not a valid schedule id"):
        schedules.put("../x", SCHEDULE)
    with pytest.raises(ValueError, match="not a valid schedule id"):
        runs.append("a/b", {"status": "ok"})


def test_runs_are_kept_in_order_and_read_newest_last(
    stores: tuple[ScheduleStorage, RunLogStorage],
) -> None:
    _, runs = stores
    assert runs.recent("daily", 5) == []
    for i in range(7):
        runs.append("daily", {"n": i, "status": "ok"})
    runs.append("other", {"n": 99})
    assert [r["n"] for r in runs.recent("daily", 3)] == [4, 5, 6]
    assert len(runs.recent("daily", 100)) == 7
    assert runs.recent("daily", 0) == []


def test_the_schedules_with_runs_are_listed_with_or_without_a_document(
    stores: tuple[ScheduleStorage, RunLogStorage],
) -> None:
    schedules, runs = stores
    assert runs.logged() == []
    schedules.put("daily", SCHEDULE)
    runs.append("daily", {"status": "ok"})
    runs.append("decl_bot_digest", {"status": "ok"})  # declared in agent.yaml: runs only
    runs.append("decl_bot_digest", {"status": "ok"})
    assert runs.logged() == ["daily", "decl_bot_digest"]
