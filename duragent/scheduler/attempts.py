"""One due time's attempts: the payload run, and run again after a failure as ``retry`` allows.

A failed attempt is retried with capped, jittered exponential backoff (``backoff_seconds``)
when the schedule has a ``retry`` block. Every step is in the run log before it happens
(``running`` before an attempt, ``retry`` before the backoff, ``recorded`` once the run wrote
into a session), so a crash never leaves an attempt unrecorded. A schedule cancelled or
removed between attempts stops them (an ``error`` line: ``cancelled``). The outcome line is
the loop's (``service``): it carries the schedule's next due time, known once they are over.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from datetime import datetime

from duragent.scheduler.clock import Clock
from duragent.scheduler.model import Schedule
from duragent.scheduler.payloads import PayloadRunner, RunReport, backoff_seconds
from duragent.scheduler.runs import to_ms

__all__ = ["Append", "outcome", "run_attempts"]

log = logging.getLogger(__name__)

Append = Callable[[dict[str, object]], Awaitable[None]]
"""Write one line to the schedule's run log (durably, before the run goes on)."""


async def run_attempts(
    first: Schedule,
    due: datetime,
    attempt: int,
    *,
    current: Callable[[], Schedule],
    wanted: Callable[[], bool],
    payloads: PayloadRunner,
    clock: Clock,
    rng: random.Random,
    append: Append,
) -> tuple[RunReport, int] | None:
    """Attempts from number ``attempt`` until one succeeds or ``first``'s retries are spent.

    ``current``: the schedule as the loop has it now (it may be edited meanwhile);
    ``wanted``: whether it is still known and active. Returns the last attempt's report and
    its number, or None when the schedule stopped being wanted (recorded as cancelled).
    """
    s = first
    total = 1 + (s.retry.max_retries if s.retry else 0)
    due_ms = to_ms(due)

    async def record(session_id: str, seq: int) -> None:
        await append({"status": "recorded", "due": due_ms, "session_id": session_id, "seq": seq})

    while True:
        if not wanted():
            await append({"status": "error", "due": due_ms, "error": "cancelled"})
            return None
        await append({"status": "running", "due": due_ms, "attempt": attempt})
        try:
            report = await payloads.run(current(), due, record, attempt)
        except Exception as exc:  # a payload runner's bug must not stop the schedule
            log.exception("schedule %s: payload failed", s.id)
            report = RunReport(error=f"{type(exc).__name__}: {exc}")
        if report.error is None or attempt >= total:
            return report, attempt
        await append({"status": "retry", "due": due_ms, "attempt": attempt, "error": report.error})
        assert s.retry is not None
        await clock.sleep(
            backoff_seconds(attempt, s.retry.initial_delay_ms, s.retry.max_delay_ms, rng)
        )
        attempt += 1


def outcome(
    report: RunReport, attempt: int, due: datetime, duration_ms: int, next_run_at: int | None
) -> dict[str, object]:
    """The run's outcome line (``ok`` or ``error``) after its last attempt, number ``attempt``."""
    error = report.error
    if error is not None and attempt > 1:
        error += f" (after {attempt} attempts)"
    entry: dict[str, object] = {
        "status": "ok" if error is None else "error",
        "due": to_ms(due),
        "duration_ms": duration_ms,
        "next_run_at": next_run_at,
    }
    if error is not None:
        entry["error"] = error
    if report.session_id is not None:
        entry["session_id"] = report.session_id
    return entry
