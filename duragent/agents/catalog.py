"""Scan the agents directory: every good agent loads, every broken one is reported.

One broken agent never stops the others: its errors are kept in ``AgentCatalog.broken`` (shown
by ``duragent doctor`` and ``agent list``, logged by ``serve`` at start-up and on reload) and
the rest are served. Loading logs nothing itself: each of those callers says it once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from duragent.agents.loader import AGENT_FILENAME, Agent, load_agent
from duragent.errors import AgentNotFoundError, ConfigError

__all__ = ["AgentCatalog", "load_catalog"]


@dataclass(frozen=True, slots=True)
class AgentCatalog:
    """Agents by name, plus the folders that failed to load and why."""

    agents: Mapping[str, Agent] = field(default_factory=dict)
    broken: Mapping[Path, ConfigError] = field(default_factory=dict)
    endpoint_changes: tuple[str, ...] = ()
    """What a reload changed in an agent's model endpoint or key source since the server
    started, one sentence each (set by the runtime; a tool that could edit ``agent.yaml``
    would redirect the key there, so the owner must see it)."""

    def get(self, name: str) -> Agent:
        """The agent called ``name``; raises AgentNotFoundError."""
        try:
            return self.agents[name]
        except KeyError:
            raise AgentNotFoundError(name) from None

    def names(self) -> list[str]:
        """Agent names in sorted order."""
        return sorted(self.agents)


def load_catalog(
    agents_dir: Path,
    *,
    workspace_directives: Path | None = None,
    env: Mapping[str, str] | None = None,
    check: Callable[[Agent], None] | None = None,
) -> AgentCatalog:
    """Load every ``<agents_dir>/<name>/agent.yaml``; never raises for a single bad agent.

    ``check`` is run on every loaded agent; a ConfigError it raises marks that agent broken.
    It is how upper layers add checks this layer cannot make (e.g. the context budget, which
    needs the token counter and the tool definitions).
    """
    agents: dict[str, Agent] = {}
    broken: dict[Path, ConfigError] = {}
    if not agents_dir.is_dir():
        return AgentCatalog(agents, broken)
    for entry in sorted(agents_dir.iterdir()):
        if not (entry / AGENT_FILENAME).is_file():
            continue
        try:
            agent = load_agent(entry, workspace_directives=workspace_directives, env=env)
            if check is not None:
                check(agent)
        except ConfigError as exc:  # said by the caller: serve logs it, doctor shows it
            broken[entry] = exc
            continue
        if agent.name in agents:
            broken[entry] = ConfigError(
                f"duplicate agent name (already defined in {agents[agent.name].directory})",
                file=entry / AGENT_FILENAME,
                field="metadata.name",
                value=agent.name,
                fix="give each agent a unique metadata.name",
            )
            continue
        agents[agent.name] = agent
    return AgentCatalog(agents, broken)
