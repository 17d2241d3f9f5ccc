"""Due times the scheduler did not start on time: which still run, which are recorded missed.

The loop (``service``) wakes at a schedule's next due time, but the server may have been down
or busy past it, or stopped during a run. What it then does is decided here, as plain
functions of the schedule, its due times and the clock, so the rules read in one place:

- **coalescing**: of the due times that passed, only the newest may run; the older ones are
  recorded as one ``missed`` line (never a burst of catch-up runs);
- **grace**: a due time later than its grace (``one_shot_grace_seconds`` for ``at``,
  ``recurring_grace_seconds`` otherwise) is recorded as ``missed`` instead of run — a
  one-shot missed while the server was down runs once on start if younger than its grace;
- **interrupted runs**: a run the log shows as started and not ended is recorded so, and —
  unless the log has its ``recorded`` line — run again for the same due time (as often as
  its retry policy allows, at least once: the kill was not the run's failure). Once it has
  written, the chat's own recovery answers or delivers what it wrote; running it again would
  say it twice. The log alone cannot tell a run killed before its write from one killed
  after it and before its ``recorded`` line, so the session tells: the attempt again writes
  under the same key (``<schedule>@<due ms>``, ``chat``), finds what the killed one wrote,
  and records it instead of writing it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from duragent.scheduler.model import At, Every, Schedule
from duragent.scheduler.payloads import SchedulerSettings
from duragent.scheduler.runs import Dangling, to_ms
from duragent.scheduler.timing import next_due

__all__ = ["Passed", "grace_seconds", "interrupted", "passed"]


@dataclass(frozen=True, slots=True)
class Passed:
    """A schedule's due times that passed by now, and what becomes of them."""

    run: datetime | None
    """The newest one, to start now (None: it is past its grace, and missed too)."""
    missed: int
    """How many are recorded missed (coalesced, or late beyond the grace)."""
    first: datetime
    """The oldest one that passed."""
    last_missed: datetime
    """The newest of the missed ones (meaningful when ``missed``)."""
    next: datetime | None
    """The schedule's next due time after them (None: there is none)."""


def grace_seconds(schedule: Schedule, settings: SchedulerSettings) -> float:
    """How late a due time of ``schedule`` may still start (seconds)."""
    if isinstance(schedule.timing, At):
        return settings.one_shot_grace_seconds
    return settings.recurring_grace_seconds


def passed(schedule: Schedule, first: datetime, now: datetime, grace: float) -> Passed:
    """The due times from ``first`` (due, not started) up to ``now``, coalesced and graced."""
    s = schedule
    latest, count = first, 1
    after: datetime | None
    if isinstance(s.timing, Every):  # straight to the newest passed due time
        step = timedelta(seconds=s.timing.every_seconds)
        extra = (now - first) // step
        latest, count = first + extra * step, 1 + extra
        after = next_due(s.timing, latest, s.created_at)  # None past ``bounds.LATEST``
    else:
        while (after := next_due(s.timing, latest, s.created_at)) is not None and after <= now:
            latest, count = after, count + 1
    run = (now - latest).total_seconds() <= grace
    missed = count - 1 if run else count
    last_missed = _before(s, latest, first, missed) if run and missed else latest
    return Passed(latest if run else None, missed, first, last_missed, after)


def _before(s: Schedule, latest: datetime, first: datetime, missed: int) -> datetime:
    """The due time just before ``latest`` (the newest of the ``missed`` ones)."""
    if isinstance(s.timing, Every):
        return latest - timedelta(seconds=s.timing.every_seconds)
    when = first
    for _ in range(missed - 1):
        after = next_due(s.timing, when, s.created_at)
        assert after is not None
        when = after
    return when


def interrupted(
    schedule: Schedule, run: Dangling, *, removed: bool = False
) -> tuple[dict[str, object], bool]:
    """The run-log line for a run the server stopped during, and whether to run it again.

    ``removed``: the schedule was removed since (a declared one no longer declared): its due
    times before it was declared again are not its to run, that one included.
    """
    retry = schedule.retry
    # A kill is not the run's failure: a run not known to have written gets one more attempt
    # even without a ``retry`` block, or its due time would be missed. Safe: that attempt
    # looks in the session for what the killed one wrote (module docstring) and writes
    # nothing twice. Interrupted again, it is recorded so (no crash loop).
    again = max(1, retry.max_retries) if retry is not None else 1
    if not run.recorded and run.attempt <= again and not removed:
        error = "interrupted: the server stopped during the run"
        retried = {"status": "retry", "due": to_ms(run.due), "attempt": run.attempt}
        return retried | {"error": error}, True
    line: dict[str, object] = {
        "status": "interrupted",
        "due": to_ms(run.due),
        "error": "the server stopped during the run"
        + (" (the chat's recovery completes what it wrote)" if run.recorded else ""),
    }
    return line, False
