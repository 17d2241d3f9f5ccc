"""Schedules as JSON, for HTTP ``/api/v1/schedules`` (its ``SchedulesPort``) and the CLI.

A schedule is shown as its file holds it (the reference's format) plus its durable run
state, where it is declared (``declared_in``, for ``spec.schedules[]``) and, for one
schedule, its run history. A new schedule is given in the file format too, less ``id``,
``created_at`` and ``status``. Errors are the project's own: ``NotFoundError`` (404),
``ConfigError`` naming the field (400), ``ScheduleRefusedError`` (409).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from duragent.core.clock import utc_now
from duragent.errors import ConfigError
from duragent.scheduler.front import Schedules
from duragent.scheduler.model import Schedule, parse_schedule, schedule_document

__all__ = ["ScheduleDesk"]

_CREATE_FIELDS = frozenset({"agent", "schedule", "payload", "destination", "retry"})


class ScheduleDesk:
    """The JSON operations on ``Schedules`` (see module docstring)."""

    def __init__(self, schedules: Schedules) -> None:
        self._schedules = schedules

    def view(self, schedule: Schedule) -> dict[str, Any]:
        """The schedule's document, run state and origin."""
        doc = schedule_document(schedule) | self._schedules.state(schedule.id).document()
        doc["declared_in"] = str(schedule.declared_in) if schedule.declared_in else None
        return doc

    def list(self, agent: str | None = None) -> list[dict[str, Any]]:
        """Every schedule (``agent``'s only when given), by id."""
        return [self.view(s) for s in self._schedules.listing(agent=agent)]

    async def get(self, schedule_id: str, runs: int = 50) -> dict[str, Any]:
        """One schedule with its last ``runs`` run-log lines (oldest first)."""
        view = self.view(self._schedules.get(schedule_id))
        return view | {"runs": await self._schedules.history_async(schedule_id, runs)}

    async def create(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create a schedule from a file-format body (``ConfigError`` names a bad field)."""
        unknown = sorted(set(body) - _CREATE_FIELDS)
        if unknown:
            raise ConfigError(
                "unknown field", field=unknown[0], allowed=", ".join(sorted(_CREATE_FIELDS))
            )
        parsed = parse_schedule(
            dict(body) | {"id": "sched_new", "created_at": utc_now(), "status": "active"}
        )
        made = await self._schedules.add_async(
            self._schedules.new(
                agent=parsed.agent,
                timing=parsed.timing,
                payload=parsed.payload,
                destination=parsed.destination,
                retry=parsed.retry,
            )
        )
        return self.view(made)

    async def cancel(self, schedule_id: str) -> dict[str, Any]:
        """Cancel a schedule (a declared one is refused: its YAML declares it)."""
        return self.view(await self._schedules.cancel_async(schedule_id))

    def run_now(self, schedule_id: str) -> bool:
        """Start a run now; False when one is already running."""
        return self._schedules.run_now(schedule_id)
