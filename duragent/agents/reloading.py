"""What a reload of the agents folder changed: agents and declared schedules, and where.

``duragent serve reload-agents`` (``POST /api/admin/v1/reload-agents``) swaps the catalog and
makes the scheduler take the schedules the agent files now declare; its answer says what
changed, so an operator sees that an edit took effect (or that it did not: a folder that no
longer loads is an agent *removed*, with its declared schedules). See
``specs/202612051100.reload-declared-schedules.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from duragent.agents.catalog import AgentCatalog
from duragent.agents.loader import Agent

__all__ = ["Changes", "Reloaded", "agent_changes", "changed_parts", "changes_between"]


@dataclass(frozen=True, slots=True)
class Changes:
    """Names (or ids) added, removed and changed by a reload, each sorted."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    def document(self) -> dict[str, list[str]]:
        """As the reload's JSON answer shows it."""
        return {
            "added": list(self.added),
            "removed": list(self.removed),
            "changed": list(self.changed),
        }


def changes_between(before: Mapping[str, object], after: Mapping[str, object]) -> Changes:
    """What differs from ``before`` to ``after``, two mappings of comparable values by name."""
    return Changes(
        added=tuple(sorted(after.keys() - before.keys())),
        removed=tuple(sorted(before.keys() - after.keys())),
        changed=tuple(sorted(k for k in before.keys() & after.keys() if before[k] != after[k])),
    )


@dataclass(frozen=True, slots=True)
class Reloaded:
    """A reload's outcome: the catalog now served and what changed (module docstring)."""

    catalog: AgentCatalog
    agents: Changes = Changes()
    parts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """For each changed agent, what changed in it (``spec.tools``, ``spec.hooks``, ``soul``…)."""
    schedules: Changes = Changes()
    """Declared schedules (``spec.schedules[]``, by id ``decl_<agent>_<name>``)."""
    notes: tuple[str, ...] = ()
    """What the operator should know about where the change took effect (several nodes)."""


_TEXTS = ("soul", "system_prompt", "instructions", "skills", "directives")
"""What an agent holds besides its manifest: prompt texts read from its folder."""


def changed_parts(before: Agent, after: Agent) -> tuple[str, ...]:
    """What differs between two loads of an agent: ``metadata``, ``spec.<field>``, texts."""
    parts = ["metadata"] if before.manifest.metadata != after.manifest.metadata else []
    old, new = before.manifest.spec, after.manifest.spec
    parts += [
        f"spec.{name}"
        for name in type(new).model_fields
        if getattr(old, name) != getattr(new, name)
    ]
    parts += [name for name in _TEXTS if getattr(before, name) != getattr(after, name)]
    return tuple(parts)


def agent_changes(
    before: AgentCatalog, after: AgentCatalog
) -> tuple[Changes, dict[str, tuple[str, ...]]]:
    """Agents added, removed and changed from ``before`` to ``after``, and what changed in each."""
    old, new = before.agents, after.agents
    parts = {
        name: changed
        for name in sorted(old.keys() & new.keys())
        if (changed := changed_parts(old[name], new[name]))
    }
    added = tuple(sorted(new.keys() - old.keys()))
    removed = tuple(sorted(old.keys() - new.keys()))
    return Changes(added, removed, tuple(parts)), parts
