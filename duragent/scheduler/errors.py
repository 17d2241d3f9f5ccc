"""The scheduler's refusals, as the front ends answer them (HTTP 404, 400/409, 503)."""

from __future__ import annotations

from duragent.errors import DuragentError, NotFoundError, ServiceUnavailableError

__all__ = ["ScheduleNotFoundError", "ScheduleRefusedError", "SchedulerUnavailableError"]


class ScheduleNotFoundError(NotFoundError):
    """No such schedule (or, for an agent, none of its own by that id)."""

    def __init__(self, schedule_id: str) -> None:
        super().__init__(f"schedule '{schedule_id}' not found")


class ScheduleRefusedError(DuragentError):
    """A request the scheduler will not do (past ``at``, a declared schedule to cancel…)."""


class SchedulerUnavailableError(ServiceUnavailableError):
    """The scheduler cannot run schedules now (``Schedules.down``): HTTP answers 503."""
