"""Declared schedules (``spec.schedules[]``) as agent files change: added, changed, removed.

A reload of the agents (``duragent serve reload-agents``) hands the scheduler the schedules
the agent files declare now (``front.Schedules.take_declared``), which takes them as a
change made elsewhere (``leading.take_changes``). What that means for each, in its run log:

- **added** (first seen, or declared again after it was removed): a ``registered`` line at
  now; due times before it are not its to run (no catch-up, no ``missed`` line for them);
- **changed**: taken at once; a run in progress finishes. Another *timing* is registered
  from now as well (its due times before the reload were never its); another payload,
  destination or retry applies from its next run;
- **removed**: a ``removed`` line; it is no longer listed and never starts again. A run in
  progress finishes and records its outcome (its retries stop); the run log stays.

Only the node that runs the loop writes these lines (``Scheduler.passive``). See
``specs/202612051100.reload-declared-schedules.md``.
"""

from __future__ import annotations

from typing import Any

from duragent.agents import AgentCatalog
from duragent.agents.reloading import Changes, changes_between
from duragent.scheduler.loading import read_declared
from duragent.scheduler.model import Schedule, schedule_document
from duragent.scheduler.runs import RunState

__all__ = ["NOT_LEADING", "comparable", "declared_changes", "registration", "removal"]

NOT_LEADING = (
    "this node does not run the scheduler now: the node that does runs the schedules its "
    "own agent files declare, so reload the agents there too"
)
"""A reload's note on a node (of several) that does not lead the scheduler: the leader
takes the schedules its own catalog declares, which this reload did not change."""


def registration(known: Schedule | None, schedule: Schedule, state: RunState) -> str | None:
    """Why ``schedule`` is registered from now (its ``registered`` line), or None.

    ``known``: the schedule as the loop had it (None: new to the loop); ``state``: its run
    state, from its run log (a ``removed`` line newer than any ``registered`` one: removed).
    """
    if schedule.declared_in is None:
        return None
    if known is None:
        if state.cursor is None:
            return "first seen"
        return "declared again" if state.removed else None
    return "its timing changed" if known.timing != schedule.timing else None


def removal(schedule: Schedule) -> str:
    """The reason a ``removed`` line gives (chats may read it: the agent, never a path)."""
    return f"no longer declared in spec.schedules of agent '{schedule.agent}'"


def comparable(schedule: Schedule) -> dict[str, Any]:
    """The schedule as compared for a change: a declared one's status is the loop's own."""
    doc = schedule_document(schedule)
    if schedule.declared_in is not None:
        doc.pop("status")  # a one-shot the loop completed is not changed by its file
    return doc


def declared_changes(before: AgentCatalog, after: AgentCatalog) -> Changes:
    """The declared schedules added, removed and changed from ``before`` to ``after``, by id.

    One with a mistake counts as not declared (it is skipped and reported, never run).
    """
    old = {s.id: comparable(s) for s in read_declared(before)[0]}
    new = {s.id: comparable(s) for s in read_declared(after)[0]}
    return changes_between(old, new)
