"""When a schedule is due: APScheduler 3.11's triggers, used only to compute fire times.

We take ``CronTrigger`` / ``IntervalTrigger`` / ``DateTrigger`` for their calendar arithmetic
and time-zone handling (``zoneinfo`` with the ``tzdata`` package, so any machine knows every
IANA zone) and nothing else: when to run, what was missed and what ran is the scheduler's own
durable loop (``service``), so restarts, coalescing and crash semantics are ours.

Cron expressions:

- 5 fields (``min hour dom month dow``), the common crontab form, day of week 0–7 with 0 and
  7 = Sunday; 6 fields add seconds in front and 7 a year at the end (the reference's form,
  whose day of week is 1–7 with 1 = Sunday). Day numbers are turned into names, because
  APScheduler 3 counts 0 = Monday (its issue 286).
- DST, as cron users expect: a wall time in the hour repeated when clocks go back runs once
  (its first pass; an hourly job runs once per wall-clock hour), and a wall time the clocks
  skip when they go forward runs one hour later in wall time (``30 2 * * *`` at 03:30 on
  that day): never twice, never silently not at all. ``_next_cron`` says why the trigger
  walks wall-clock time rather than the zone.
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.cron import CronTrigger

from duragent.core.clock import utc_now
from duragent.scheduler.bounds import LATEST, TIME_RANGE, TimingProblem, every_problem, in_range
from duragent.scheduler.model import At, Cron, Every, Timing

__all__ = ["check_timing", "cron_trigger", "describe_timing", "next_due", "zone"]

_FIVE_FIELD_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun")  # 0..7
_SIX_FIELD_DAYS = ("", "sun", "mon", "tue", "wed", "thu", "fri", "sat")  # 1..7
_NUMERIC = re.compile(r"(\d+)(?:-(\d+))?(?:/(\d+))?\Z")
_CRON_FIX = (
    "use 5 fields 'minute hour day-of-month month day-of-week' (e.g. '0 9 * * MON-FRI'), "
    "or 6–7 with seconds first"
)


def zone(name: str | None) -> ZoneInfo:
    """The IANA zone ``name`` (UTC when None); ``ZoneInfoNotFoundError`` if unknown."""
    return ZoneInfo(name or "UTC")


def _days(field: str, names: tuple[str, ...]) -> str:
    """A day-of-week field with every number written as a day name (lists expanded)."""
    parts = []
    for part in field.split(","):
        match = _NUMERIC.match(part)
        if match is None:
            parts.append(part)
            continue
        first = int(match[1])
        last = int(match[2]) if match[2] else first
        step = int(match[3]) if match[3] else 1
        if match[3] and not match[2]:
            last = len(names) - 1
        for number in (first, last):
            if not 0 <= number < len(names) or not names[number]:
                raise ValueError(f"day of week {number} is out of range")
        parts.extend(names[n] for n in range(first, last + 1, step))
    return ",".join(dict.fromkeys(parts))


@functools.lru_cache(maxsize=4096)
def cron_trigger(expr: str) -> CronTrigger:
    """The trigger for ``expr`` over wall-clock time (see ``next_due``); ValueError if wrong.

    Cached: building one compiles every field (most of the cost of a due-time computation),
    and a trigger is immutable once built.
    """
    fields = expr.split()
    timezone = UTC
    if len(fields) == 5:
        minute, hour, day, month, dow = fields
        return CronTrigger(
            minute=minute, hour=hour, day=day, month=month,
            day_of_week=_days(dow, _FIVE_FIELD_DAYS), second="0", timezone=timezone,
        )  # fmt: skip
    if len(fields) in (6, 7):
        second, minute, hour, day, month, dow = fields[:6]
        return CronTrigger(
            second=second, minute=minute, hour=hour, day=day, month=month,
            day_of_week=_days(dow, _SIX_FIELD_DAYS),
            year=fields[6] if len(fields) == 7 else None, timezone=timezone,
        )  # fmt: skip
    raise ValueError(f"has {len(fields)} fields, expected 5 (or 6–7 with seconds)")


def check_timing(timing: Timing) -> TimingProblem | None:
    """What is wrong with ``timing`` (field, reason, fix, allowed range), or None.

    Every field inside its documented range (``bounds``), so ``next_due`` never overflows.
    """
    if isinstance(timing, Cron):
        try:
            zone(timing.tz)
        except (ZoneInfoNotFoundError, ValueError):
            return TimingProblem(
                "tz", "is not a known IANA time zone", "e.g. Europe/Berlin, America/New_York"
            )
        try:
            cron_trigger(timing.expr)
        except ValueError as exc:
            return TimingProblem("expr", f"is not a valid cron expression: {exc}", _CRON_FIX)
        now = utc_now()
        if next_due(timing, now, now) is None:
            return TimingProblem(
                "expr", "never fires again", "pick a date that is still to come", TIME_RANGE
            )
    if isinstance(timing, Every):
        problem = every_problem(timing.every_seconds)
        if problem is not None:
            return problem
        if timing.anchor is not None and not in_range(timing.anchor):
            return _out_of_range("anchor")
    if isinstance(timing, At) and not in_range(timing.at):
        return _out_of_range("at")
    return None


def _out_of_range(name: str) -> TimingProblem:
    return TimingProblem(
        name, "is out of range", "write a time like 2026-12-01T09:00:00Z", TIME_RANGE
    )


def next_due(timing: Timing, after: datetime, created_at: datetime) -> datetime | None:
    """The first due time strictly after ``after`` (aware), or None when there is none.

    ``At`` is due once: its time if that is after ``after``. ``Every`` counts whole
    intervals from its anchor (``created_at`` when it has none). A due time at or after
    ``bounds.LATEST`` is none: the arithmetic is checked before a ``datetime`` is built,
    so no timing, even one never validated, raises ``OverflowError`` here.
    """
    match timing:
        case At(at=at):
            return at if after < at < LATEST else None
        case Every(every_seconds=seconds, anchor=anchor):
            start = anchor or created_at
            if after < start:
                return start if start < LATEST else None
            step = max(1, seconds) * 1_000_000  # whole microseconds: no timedelta overflow
            offset = ((after - start) // _MICROSECOND // step + 1) * step
            if offset >= (LATEST - start) // _MICROSECOND:
                return None
            return start + offset * _MICROSECOND
        case Cron(expr=expr, tz=tz):
            try:
                found = _next_cron(expr, zone(tz), after)
            except OverflowError:  # a wall time near year 9999 placed in a zone
                return None
            return found if found is not None and found < LATEST else None


_MICROSECOND = timedelta(microseconds=1)


def _next_cron(expr: str, timezone: ZoneInfo, after: datetime) -> datetime | None:
    """The next instant after ``after`` whose wall time in ``timezone`` matches ``expr``.

    The trigger walks wall-clock time (as if it were UTC, which has no DST), and each wall
    time found is placed in the zone with ``fold=0``: a repeated wall time is its first pass
    (the next search starts from the wall time already passed, so never a second run), a
    skipped one lands an hour later. Done so rather than with a zone-aware trigger because
    APScheduler 3.11 skips a day when its search starts just after midnight on a
    spring-forward day (``0 0 * * *`` in New York went from 8 March 2026 to 10 March).
    """
    trigger = cron_trigger(expr)
    wall = after.astimezone(timezone).replace(tzinfo=UTC)
    while True:
        found: datetime | None = trigger.get_next_fire_time(None, wall + timedelta(microseconds=1))
        if found is None:
            return None
        instant = found.replace(tzinfo=timezone, fold=0).astimezone(UTC)
        if instant > after:
            return instant
        wall = found


def describe_timing(timing: Timing) -> str:
    """How the ``schedule`` tool lists a timing (``cron: 0 9 * * * (Europe/Berlin)``)."""
    match timing:
        case At(at=at):
            return f"at {at.isoformat()}"
        case Every(every_seconds=seconds):
            if seconds % 3600 == 0:
                return f"every {seconds // 3600} hours"
            if seconds % 60 == 0:
                return f"every {seconds // 60} minutes"
            return f"every {seconds} seconds"
        case Cron(expr=expr, tz=tz):
            return f"cron: {expr}" + (f" ({tz})" if tz else "")
