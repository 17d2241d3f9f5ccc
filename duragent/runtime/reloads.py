"""A reload of the agents as ``duragent serve reload-agents`` asks for it: everything they declare.

The catalog is swapped first (``Runtime.reload_agents``): tools, access rules and hooks are
read from it at each turn and each chat message, so they hold from the next one on. Then the
scheduler takes the schedules the agent files declare now (``Schedules.take_declared``):
added ones registered from now, changed ones taken, removed ones never started again. The
answer says what changed (``agents.reloading.Reloaded``) and, when it matters, where it took
effect: with several nodes, the node that leads the scheduler runs what *its* agent files
declare. See ``specs/202612051100.reload-declared-schedules.md``.
"""

from __future__ import annotations

import logging

from duragent.agents import AgentCatalog
from duragent.agents.reloading import Changes, Reloaded, agent_changes
from duragent.scheduler import Schedules
from duragent.scheduler.declared import declared_changes
from duragent.scheduler.loading import read_declared

__all__ = ["SCHEDULER_OFF", "reloaded"]

log = logging.getLogger(__name__)

SCHEDULER_OFF = "the scheduler is disabled (scheduler.enabled: false): no declared schedule runs"


async def reloaded(
    before: AgentCatalog, after: AgentCatalog, schedules: Schedules | None
) -> Reloaded:
    """What the reload from ``before`` to ``after`` changed, its schedules taken by ``schedules``.

    ``schedules``: the scheduler (None: disabled). A run log or the database that cannot be
    read leaves the new declarations to the next reload (or, with several nodes, the next
    re-read a few seconds later): said in a note and logged, the catalog reloaded all the same.
    """
    agents, parts = agent_changes(before, after)
    declared = declared_changes(before, after)
    notes: list[str] = []
    if schedules is None:
        if read_declared(after)[0] or declared:
            notes.append(SCHEDULER_OFF)
    else:
        try:
            note = await schedules.take_declared()
        except OSError as exc:  # StorageError too
            note = f"the declared schedules could not be taken now ({exc}); reload again"
            log.error("reload: %s", note)
        if note is not None:
            notes.append(note)
    _log(agents, declared)
    return Reloaded(after, agents, parts, declared, tuple(notes))


def _log(agents: Changes, schedules: Changes) -> None:
    said = [
        f"{what} {kind}: {', '.join(names)}"
        for what, changes in (("agents", agents), ("declared schedules", schedules))
        for kind, names in (
            ("added", changes.added),
            ("removed", changes.removed),
            ("changed", changes.changed),
        )
        if names
    ]
    log.info("agents reloaded: %s", "; ".join(said) or "nothing changed")
