"""Scheduled jobs (at / every / cron with time zones) that run turns and deliver results.

A front end like the gateways: it calls the turn runner and never imports a gateway; delivery
goes through the kit's ``OutboundPort`` and ``Delivery`` (``duragent.frontkit``).

- ``model``: a schedule in the reference's file format (parsed with file/field errors);
  ``timing``: due times on APScheduler 3.11's triggers (cron in IANA zones, DST);
- ``runs``: the run log's lines and the durable state they add up to;
  ``service``: the loop (at most once per due time, the cap), ``catch_up`` (coalescing,
  grace, interrupted runs), ``attempts`` (retries);
  ``clock``: the wall clock or a test's;
- ``chat``: a payload run through ``TurnRunner`` and delivered by ``Delivery``;
  ``front``: ``Schedules``, the service and its operations (tool, HTTP, CLI); ``leading``:
  the loop on the leader only when several nodes share the schedules (under
  ``cluster.run_as_leader``); ``claiming``: a due time claimed once across nodes, through
  an outage (scheduling logic over the store's ``RunClaims``, so it stays here);
  ``tool``: the ``schedule`` tool; ``desk``: schedules as JSON (HTTP, CLI);
  ``declared``: declared schedules added, changed and removed by a reload of the agents
  (``slots`` keeps a removed one's run until it ends).

See specs/202611240545.scheduler.md.
"""

from __future__ import annotations

from duragent.scheduler.clock import Clock, ManualClock, SystemClock
from duragent.scheduler.desk import ScheduleDesk
from duragent.scheduler.errors import ScheduleNotFoundError, ScheduleRefusedError
from duragent.scheduler.front import Schedules, declared_id
from duragent.scheduler.model import (
    At,
    Cron,
    Destination,
    Every,
    MessagePayload,
    Retry,
    Schedule,
    TaskPayload,
    parse_schedule,
    schedule_document,
)
from duragent.scheduler.runs import RunState
from duragent.scheduler.service import RunReport, Scheduler, SchedulerSettings
from duragent.scheduler.tool import ScheduleTool

__all__ = [
    "At",
    "Clock",
    "Cron",
    "Destination",
    "Every",
    "ManualClock",
    "MessagePayload",
    "Retry",
    "RunReport",
    "RunState",
    "Schedule",
    "ScheduleDesk",
    "ScheduleNotFoundError",
    "ScheduleRefusedError",
    "ScheduleTool",
    "Scheduler",
    "SchedulerSettings",
    "Schedules",
    "SystemClock",
    "TaskPayload",
    "declared_id",
    "parse_schedule",
    "schedule_document",
]
