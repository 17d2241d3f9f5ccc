"""``ScheduleStorage`` and ``RunLogStorage`` in PostgreSQL (``schedules``, ``schedule_runs``).

Same shapes as ``schedule_files``: a schedule is a mapping (the scheduler validates it), a
run log keeps the newest ``PRUNE_KEEP`` runs per schedule. Ids are checked as the file
backend checks them, so a schedule can move between backends unchanged. Not wired into the
scheduler yet: schedules are files a person edits, and firing each due time once across
nodes (issue 24 item 3) decides how the scheduler uses these.
"""

from __future__ import annotations

import json
from typing import Any

from duragent.core.nesting import loads_bounded
from duragent.store.postgres.connection import Database
from duragent.store.schedule_files import PRUNE_KEEP, check_schedule_id

__all__ = ["PostgresRunLog", "PostgresSchedules"]


def _dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


class PostgresSchedules:
    """Schedules as rows (see module docstring)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def ids(self) -> list[str]:
        """Every schedule id, sorted."""
        with self._db.transaction("listing schedules") as conn:
            rows = conn.execute("SELECT schedule_id FROM schedules").fetchall()
        return sorted(str(r[0]) for r in rows)

    def get(self, schedule_id: str) -> dict[str, Any] | None:
        """The schedule, or None."""
        with self._db.transaction(f"reading schedule {schedule_id}") as conn:
            row = conn.execute(
                "SELECT schedule::text FROM schedules WHERE schedule_id = %s",
                (check_schedule_id(schedule_id),),
            ).fetchone()
        if row is None:
            return None
        data = loads_bounded(str(row[0]))
        return data if isinstance(data, dict) else {"(document)": data}

    def put(self, schedule_id: str, schedule: dict[str, Any]) -> None:
        """Create or replace the schedule."""
        with self._db.transaction(f"writing schedule {schedule_id}") as conn:
            conn.execute(
                "INSERT INTO schedules (schedule_id, schedule) VALUES (%s, %s) "
                "ON CONFLICT (schedule_id) DO UPDATE SET schedule = excluded.schedule, "
                "updated_at = now()",
                (check_schedule_id(schedule_id), _dumps(schedule)),
            )

    def remove(self, schedule_id: str) -> None:
        """Delete the schedule (missing is fine); its runs are kept."""
        with self._db.transaction(f"removing schedule {schedule_id}") as conn:
            conn.execute(
                "DELETE FROM schedules WHERE schedule_id = %s", (check_schedule_id(schedule_id),)
            )


class PostgresRunLog:
    """Each schedule's runs, newest last; older than the last ``PRUNE_KEEP`` are pruned."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def append(self, schedule_id: str, run: dict[str, Any]) -> None:
        """Record one run (committed before returning) and prune the oldest past the cap."""
        sid = check_schedule_id(schedule_id)
        with self._db.transaction(f"recording a run of {schedule_id}") as conn:
            conn.execute(
                "INSERT INTO schedule_runs (schedule_id, run) VALUES (%s, %s)", (sid, _dumps(run))
            )
            conn.execute(
                "DELETE FROM schedule_runs WHERE schedule_id = %(s)s AND run_no <= ("
                "SELECT run_no FROM schedule_runs WHERE schedule_id = %(s)s "
                "ORDER BY run_no DESC OFFSET %(keep)s LIMIT 1)",
                {"s": sid, "keep": PRUNE_KEEP},
            )

    def logged(self) -> list[str]:
        """Every schedule id with runs, sorted."""
        with self._db.transaction("listing the schedules with runs") as conn:
            rows = conn.execute(
                "SELECT DISTINCT schedule_id FROM schedule_runs ORDER BY schedule_id"
            ).fetchall()
        return [str(r[0]) for r in rows]

    def recent(self, schedule_id: str, limit: int) -> list[dict[str, Any]]:
        """The last ``limit`` runs, oldest first."""
        if limit <= 0:
            return []
        with self._db.transaction(f"reading the runs of {schedule_id}") as conn:
            rows = conn.execute(
                "SELECT run::text FROM schedule_runs WHERE schedule_id = %s "
                "ORDER BY run_no DESC LIMIT %s",
                (check_schedule_id(schedule_id), limit),
            ).fetchall()
        runs = [loads_bounded(str(r[0])) for r in reversed(rows)]
        return [r for r in runs if isinstance(r, dict)]
