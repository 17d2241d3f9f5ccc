"""What ``serve`` says and sizes at start: agents' and policy files' problems, descriptors.

``report_agents`` logs what ``duragent doctor`` would say of the agents just loaded (so a
server started without ``doctor`` still tells), and ``descriptor_budget`` shares the
process's open-file limit between connections and live session actors.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from duragent.agents import AgentCatalog
from duragent.config import WorkspaceConfig
from duragent.llm import credential_problem
from duragent.session import SessionRegistry
from duragent.session.descriptors import budget, connection_cap
from duragent.session.gate import MAX_ACTIVE_ASKS
from duragent.tools.policy_check import agent_policy_files, check_policy_file
from duragent.tools.policy_files import set_aside_local_policy

__all__ = ["DescriptorCap", "descriptor_budget", "report_agents"]

log = logging.getLogger(__name__)


def report_agents(
    catalog: AgentCatalog, workspace_policy: Path, env: Mapping[str, str] | None
) -> None:
    """Log broken agents, agents' warnings, broken policy files and models it cannot call.

    Each broken agent once (the catalog does not log it), with all its problems; a warning
    that applies to several agents (the offline model, a key that is not set) once, naming
    them.
    """
    for path, error in sorted(catalog.broken.items()):
        log.error("agent %s not loaded: %s", path.name, _indented(error.render()))
    policies = [workspace_policy]
    for agent in catalog.agents.values():
        for warning in agent.warnings:
            log.warning("agent '%s': %s", agent.name, warning)
        set_aside_local_policy(agent.directory, workspace_policy)  # a bad one: set aside now
        policies.extend(agent_policy_files(agent.directory))
    for file in policies:
        errors, warnings = check_policy_file(file)
        for error in errors:
            log.error("policy file: %s (turns of its agents fail until it is fixed)", error)
        for warning in warnings:
            log.warning("policy file: %s", warning)
    cannot_call: dict[str, list[str]] = {}
    offline: list[str] = []
    for name in catalog.names():
        agent = catalog.agents[name]
        problem = credential_problem(agent.model.provider, agent.model.base_url, env)
        if problem:  # as doctor says it; otherwise the first turn is the first to know
            cannot_call.setdefault(problem, []).append(name)
        if agent.model.provider == "offline":
            offline.append(name)
    for problem, names in cannot_call.items():
        log.warning(
            "%s cannot call %s model: %s (%s turns fail until then)",
            _agents(names),
            "its" if len(names) == 1 else "their",
            problem,
            "its" if len(names) == 1 else "their",
        )
    if offline:
        where = (
            catalog.agents[offline[0]].directory / "agent.yaml"
            if len(offline) == 1
            else "each one's agent.yaml"
        )
        log.warning(
            "%s %s the offline model: replies are fixed text, not AI (set spec.model in %s "
            "to use a real model)",
            _agents(offline),
            "uses" if len(offline) == 1 else "use",
            where,
        )


def _agents(names: list[str]) -> str:
    """``agent 'a'`` or ``agents 'a', 'b'``."""
    quoted = ", ".join(f"'{n}'" for n in names)
    return f"agent {quoted}" if len(names) == 1 else f"agents {quoted}"


def _indented(text: str) -> str:
    """One problem on the line; several on lines of their own below it."""
    lines = text.splitlines()
    if len(lines) == 1:
        return text
    return "".join(f"\n  {line}" for line in lines)


@dataclass(frozen=True, slots=True)
class DescriptorCap:
    """What the open-file limit allows: the config to serve with, the connection cap."""

    config: WorkspaceConfig
    """``server.max_connections`` lowered to what fits (turns beyond wait for a slot)."""
    connections: int | None
    """The HTTP server's cap on open connections (None: no cap)."""


def descriptor_budget(config: WorkspaceConfig, registry: SessionRegistry) -> DescriptorCap:
    """Raise the open-file limit; cap live actors at what fits beside the connections."""
    asks = config.sessions.active_actors
    planned = budget(
        max_live=registry.settings.max_live,
        max_connections=config.server.max_connections,
        active_asks=MAX_ACTIVE_ASKS if asks == "auto" else asks,
    )
    if planned.raised_from != planned.plan.limit:
        log.info("open-file limit raised from %d to %d", planned.raised_from, planned.plan.limit)
    for warning in planned.warnings:
        log.warning("%s", warning)
    registry.live_cap = min(registry.live_cap, planned.plan.actors)
    server = config.server
    if planned.plan.connections < server.max_connections:
        lowered = server.model_copy(update={"max_connections": planned.plan.connections})
        config = config.model_copy(update={"server": lowered})
    return DescriptorCap(config, connection_cap(planned.plan))
