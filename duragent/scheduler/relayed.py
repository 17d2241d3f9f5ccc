"""A due time's payload run on the node that serves its chat (several nodes, one database).

The scheduler's loop runs on its leader; the destination chat's session may live on another
node (its lease: a person talked to it there). Writing into it here meets ``LeaseHeldError``
(before, every attempt failed so, and the due time ended in ``error``). ``ChatPayloads``
runs the attempt through the cluster's relay (``cluster.relay.OwnerRelay.serve``), as a chat
message is: here when this node may take the session, else handed to the live owner as
``{"scheduled_run": {schedule, due, attempt}}``, which ``ScheduledRuns`` (that node's
receiver) runs there with its own ``ChatPayloads``; an owner gone is waited out for its lease
and the session taken over here.

The owner answers 200 once the attempt succeeded and an error status when it failed (the
sender records the attempt failed, and its retry policy applies). The owner does not write
the run log's ``recorded`` line (it is the leader's log): a leader killed after the hand-over
runs the due time again, and that attempt finds the message or task in the session by its key
(``<schedule>@<due ms>``) and writes nothing twice.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from duragent.cluster import Unpacked
from duragent.errors import DuragentError
from duragent.scheduler.model import Schedule
from duragent.scheduler.service import PayloadRunner

__all__ = ["WIRE_KEY", "ScheduledRuns", "from_wire", "to_wire"]

log = logging.getLogger(__name__)

WIRE_KEY = "scheduled_run"


class ScheduledRunFailedError(DuragentError):
    """The attempt run for another node failed (its sender records it failed)."""


def to_wire(schedule_id: str, due_ms: int, attempt: int) -> bytes:
    """The body handed to the owner."""
    return json.dumps(
        {WIRE_KEY: {"schedule": schedule_id, "due": due_ms, "attempt": attempt}}
    ).encode()


def from_wire(body: bytes) -> tuple[str, int, int]:
    """(schedule id, due ms, attempt); ``ValueError`` when ``body`` is no scheduled run."""
    try:
        run = json.loads(body)[WIRE_KEY]
        return str(run["schedule"]), int(run["due"]), int(run["attempt"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"not a scheduled run ({exc})") from exc


async def _no_record(session_id: str, seq: int) -> None:
    """The owner writes no run-log line (module docstring)."""


class ScheduledRuns:
    """Runs the due times other nodes hand here (``cluster.relay.Receiver``)."""

    def __init__(self, lookup: Callable[[str], Schedule | None], payloads: PayloadRunner) -> None:
        self._lookup = lookup
        self._payloads = payloads

    def unpack(self, body: bytes) -> Unpacked | None:
        """The run handed here; None while this node does not know the schedule yet.

        It re-reads them every few seconds: the sender's next attempt finds it.
        """
        schedule_id, due_ms, attempt = from_wire(body)
        schedule = self._lookup(schedule_id)
        if schedule is None:
            log.warning("schedule %s: handed a due time; not known here yet", schedule_id)
            return None
        due = datetime.fromtimestamp(due_ms / 1000, tz=UTC)

        async def run() -> None:
            report = await self._payloads.run(schedule, due, _no_record, attempt)
            if report.error is not None:
                raise ScheduledRunFailedError(f"schedule {schedule_id}: {report.error}")

        return Unpacked(f"schedule {schedule_id} due {due_ms}", run)
