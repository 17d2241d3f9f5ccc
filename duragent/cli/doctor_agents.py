"""``doctor``'s checks of the agents: every problem of a broken one, and each loaded one's setup.

A broken agent is read again with ``check_agent``, which goes on past its first failing stage,
so an unset ``${VAR}``, a value of the wrong type, an unknown field and a misspelt tool name
are all named in the same run (issue 39), each with its file, line, field and fix. A warning
that applies to several agents (the offline model, a key that is not set) is one line naming
them, not one line per agent.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from duragent.agents import AgentCatalog
from duragent.agents.loader import check_agent
from duragent.cli.findings import Finding, Level
from duragent.config import WorkspacePaths
from duragent.errors import ConfigError, ConfigErrors
from duragent.llm import credential_problem
from duragent.turns.agent_budget import agent_budget, budget_settings
from duragent.turns.summaries import describe_summaries

__all__ = ["agent_findings", "config_findings"]


def config_findings(
    check: str, errors: ConfigError | Iterable[ConfigError], level: Level = Level.ERROR
) -> list[Finding]:
    """One finding per problem (a ``ConfigErrors`` is several)."""
    if isinstance(errors, ConfigError):
        errors = errors.errors if isinstance(errors, ConfigErrors) else [errors]
    return [Finding(level, check, e.render(), None) for e in errors]


def agent_findings(paths: WorkspacePaths, catalog: AgentCatalog) -> list[Finding]:
    """Broken agents with every problem, then each loaded agent, then shared warnings."""
    found: list[Finding] = []
    for path, error in sorted(catalog.broken.items()):
        found.extend(_broken(path, error, paths))
    if not catalog.agents and not catalog.broken:
        found.append(
            Finding(
                Level.WARNING,
                "agents",
                f"no agents in {paths.agents}",
                "create one with `duragent agent create NAME`",
            )
        )
    cannot_call: dict[str, list[str]] = {}
    offline: list[str] = []
    for name in catalog.names():
        agent = catalog.agents[name]
        check = f"agent {name}"
        found.append(Finding(Level.OK, check, f"{agent.model.provider}/{agent.model.name}"))
        found.append(
            Finding(Level.OK, check, f"budget: {agent_budget(agent, paths.workspace).describe()}")
        )
        settings = budget_settings(agent)
        found.append(Finding(Level.OK, check, settings.describe_tier()))
        found.append(Finding(Level.OK, check, describe_summaries(agent, settings.window)))
        found.extend(config_findings(check, agent.warnings, Level.WARNING))
        problem = credential_problem(agent.model.provider, agent.model.base_url)
        if problem:
            cannot_call.setdefault(problem, []).append(name)
        if agent.model.provider == "offline":
            offline.append(name)
    for problem, names in cannot_call.items():
        found.append(_shared(Level.ERROR, names, problem, "set the variable, then restart"))
    if offline:
        one = catalog.agents[offline[0]].directory / "agent.yaml"
        found.append(
            _shared(
                Level.WARNING,
                offline,
                f"{'use' if len(offline) > 1 else 'uses'} the offline model: replies are fixed "
                "text, not AI",
                f"set spec.model in {one} to a real provider"
                if len(offline) == 1
                else f"set spec.model in each one's agent.yaml (in {paths.agents}) to a real "
                "provider",
            )
        )
    return found


def _shared(level: Level, names: list[str], message: str, fix: str) -> Finding:
    """One finding for what applies to every agent of ``names`` (``[agents a, b] …``)."""
    check = f"agents {', '.join(names)}" if len(names) > 1 else f"agent {names[0]}"
    return Finding(level, check, message, fix)


def _broken(path: Path, error: ConfigError, paths: WorkspacePaths) -> list[Finding]:
    """Every problem of the agent in ``path``, its warnings too (one run says them all)."""
    check = f"agent {path.name}"
    again = check_agent(path, workspace_directives=paths.directives)
    # No error on a second reading: the catalog's own checks refused it (the context
    # budget, a duplicate name), which are said as the catalog said them.
    errors = again.errors or (error.errors if isinstance(error, ConfigErrors) else [error])
    return config_findings(check, errors) + config_findings(check, again.warnings, Level.WARNING)
