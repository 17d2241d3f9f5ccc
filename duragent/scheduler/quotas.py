"""How many schedules a chat may make, and how often they may run (issue 33).

One message once made 32 schedules and a chat then received 240 messages in ten seconds:
anybody a chat lets in can ask the agent to use the ``schedule`` tool, and each ``task``
run is a whole model turn. So the tool refuses, before anything is written, a schedule that
would pass the agent's ``spec.access.quotas``:

- ``schedules_per_chat``: active schedules made from one chat (those the ``schedule`` tool
  made with that chat as destination; the agent's declared ones and those the operator made
  over HTTP or the CLI are not counted);
- ``min_schedule_interval_seconds``: the shortest gap between two runs. ``every_seconds`` is
  its own gap; a cron expression's is computed from its time-of-day fields (second, minute,
  hour: 5-field crons fire at second 0, 6–7-field ones have a seconds field), taking every
  day as one it may fire on, so the gap found is never longer than the real one (a weekly
  cron counts as daily); ``at`` runs once: its gap is the one to the chat's closest other
  active one-shot.

Only chat-made schedules are limited: what agent.yaml declares and what the operator
creates are the owner's own decisions (they must still be valid: ``timing.check_timing``).
A schedule file written before these quotas existed is loaded and run as written (the
scheduler never rewrites a file on its own); ``duragent schedules cancel`` stops it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from datetime import datetime, timedelta

from apscheduler.triggers.cron import CronTrigger

from duragent.agents.access_spec import QuotaSpec
from duragent.scheduler.model import At, Cron, Destination, Every, Schedule, Timing
from duragent.scheduler.timing import cron_trigger

__all__ = ["schedule_refusal", "shortest_gap"]

_DAY = 86_400
_QUOTAS = "spec.access.quotas"
_SECOND = timedelta(seconds=1)


def schedule_refusal(
    timing: Timing, chat: Destination, schedules: Iterable[Schedule], quotas: QuotaSpec
) -> str | None:
    """Why the ``schedule`` tool must not create ``timing`` from ``chat``, or None.

    ``schedules``: the agent's schedules (any status); ``quotas``: the agent's
    ``spec.access.quotas`` (``schedules_per_chat``, ``min_schedule_interval_seconds``). The
    text names the limit, the field that raises it, and what the chat can do meanwhile.
    """
    limit = quotas.schedules_per_chat
    made = sum(1 for s in schedules if _made_from(s, chat))
    if made >= limit:
        field = f"{_QUOTAS}.schedules_per_chat"
        have = f"this chat has {made} active schedules, the most {field} allows ({limit})"
        if limit == 0:
            have = f"schedules may not be made from a chat ({field} is 0)"
        return (
            f"Error: quota reached: {have}. Cancel one first (action=cancel), or the "
            f"agent's owner can raise {field} in its agent.yaml."
        )
    minimum = quotas.min_schedule_interval_seconds
    gap = _gap(timing)
    if isinstance(timing, At):  # one-shots are spaced from the chat's other one-shots
        gap = _gap_to_one_shots(timing, (s for s in schedules if _made_from(s, chat)))
    if gap is not None and gap < minimum:
        field = f"{_QUOTAS}.min_schedule_interval_seconds"
        runs = (
            f"this one-shot would run {gap} s from another of this chat's"
            if isinstance(timing, At)
            else f"this schedule would run every {gap} s"
        )
        return (
            f"Error: quota: {runs}; schedules made from a "
            f"chat may run at most once every {minimum} s ({field}). Use a longer interval, "
            f"or the agent's owner can lower {field} in its agent.yaml."
        )
    return None


def _made_from(schedule: Schedule, chat: Destination) -> bool:
    """An active schedule the ``schedule`` tool made in ``chat`` (it records the session)."""
    return (
        schedule.status == "active"
        and schedule.declared_in is None
        and schedule.created_by_session is not None
        and schedule.destination == chat
    )


def _gap_to_one_shots(timing: At, made: Iterable[Schedule]) -> int | None:
    """Seconds to the closest active one-shot the chat made (None: it has none).

    Twenty one-shots a second apart would be twenty messages in twenty seconds: a chat's
    one-shots are held to the same minimum as its recurring schedules.
    """
    gaps = [
        int(abs((s.timing.at - timing.at).total_seconds()))
        for s in made
        if isinstance(s.timing, At)
    ]
    return min(gaps) if gaps else None


def _gap(timing: Timing) -> int | None:
    """Seconds between two runs at the closest (None: a one-shot)."""
    if isinstance(timing, At):
        return None
    if isinstance(timing, Every):
        return timing.every_seconds
    assert isinstance(timing, Cron)
    return shortest_gap(timing.expr)


def shortest_gap(expr: str) -> int:
    """The shortest gap in seconds between two runs of cron ``expr`` (valid; see module doc).

    The times of day it fires (every hour × minute × second it allows, at most 86,400) are
    sorted; the gap is the smallest difference, the one across midnight included. A cron
    firing once a day counts 86,400 s, whatever its day fields say.
    """
    trigger = cron_trigger(expr)
    hours = _values(trigger, "hour", 24)
    minutes = _values(trigger, "minute", 60)
    seconds = _values(trigger, "second", 60)
    times = sorted(h * 3600 + m * 60 + s for h in hours for m in minutes for s in seconds)
    if not times:
        return _DAY
    gaps = [b - a for a, b in itertools.pairwise(times)]
    return min([*gaps, _DAY - times[-1] + times[0]])


def _values(trigger: CronTrigger, name: str, count: int) -> list[int]:
    """The values of field ``name`` (hour, minute or second) the trigger fires at."""
    field = next(f for f in trigger.fields if f.name == name)
    step = {"hour": timedelta(hours=1), "minute": timedelta(minutes=1)}.get(name, _SECOND)
    start = datetime(2000, 1, 1)  # a probe of one field: no zone involved
    return [v for v in range(count) if field.get_next_value(start + v * step) == v]
