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
sender records the attempt failed, and its retry policy applies). The owner writes the run
log's ``recorded`` line itself, into the log every node shares, between the leader's
``running`` and its outcome: after a leader's crash the run is known to have written, and the
chat's recovery (on the owner) completes it. A leader killed before that line runs the due
time again, and that attempt finds the message or task in the session by its key
(``<schedule>@<due ms>``) and writes nothing twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from duragent.cluster import Unpacked
from duragent.errors import DuragentError
from duragent.scheduler.clock import Clock
from duragent.scheduler.model import Schedule
from duragent.scheduler.runs import to_ms
from duragent.scheduler.service import PayloadRunner
from duragent.store.protocols import RunLogStorage

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


class ScheduledRuns:
    """Runs the due times other nodes hand here (``cluster.relay.Receiver``)."""

    def __init__(
        self,
        lookup: Callable[[str], Schedule | None],
        payloads: PayloadRunner,
        runs: RunLogStorage,
        clock: Clock,
    ) -> None:
        self._lookup = lookup
        self._payloads = payloads
        self._runs = runs
        self._clock = clock

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

        async def record(session_id: str, seq: int) -> None:  # the shared log's line
            line = {"ts": to_ms(self._clock.now()), "status": "recorded", "due": due_ms}
            line |= {"session_id": session_id, "seq": seq}
            await asyncio.to_thread(self._runs.append, schedule_id, line)

        async def run() -> None:
            report = await self._payloads.run(schedule, due, record, attempt)
            if report.error is not None:
                raise ScheduledRunFailedError(f"schedule {schedule_id}: {report.error}")

        return Unpacked(f"schedule {schedule_id} due {due_ms}", run)
