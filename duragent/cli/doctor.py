"""``duragent doctor``: check a workspace and print every problem with its fix.

Each finding is an error (the workspace will not work as configured; exit code 1), a warning
(it works, but probably not as intended) or ok. Nothing is modified.
"""

from __future__ import annotations

import ipaddress
import json
import os
from pathlib import Path

from duragent.agents import load_catalog
from duragent.cli.doctor_files import (
    chat_index_findings,
    policy_findings,
    process_findings,
    sandbox_findings,
    schedule_findings,
)
from duragent.cli.doctor_store import read_store
from duragent.cli.findings import Finding, Level
from duragent.config import WorkspaceConfig, load_workspace
from duragent.context.offline_encodings import OFFLINE_ENCODINGS, get_offline_encoding
from duragent.errors import ConfigError, ConfigErrors, DuragentError
from duragent.gateways.external.launch import Launch
from duragent.llm import credential_problem
from duragent.turns.agent_budget import agent_budget, budget_check, budget_settings
from duragent.turns.summaries import describe_summaries

__all__ = ["Finding", "Level", "render_json", "render_text", "run_checks"]


def _config_findings(check: str, exc: ConfigError, level: Level = Level.ERROR) -> list[Finding]:
    errors = exc.errors if isinstance(exc, ConfigErrors) else [exc]
    return [Finding(level, check, e.render(), None) for e in errors]


def _is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run_checks(config_file: Path) -> list[Finding]:
    """Every check, in order; never raises for a problem in the workspace."""
    found: list[Finding] = []
    try:
        ws = load_workspace(config_file)
    except ConfigError as exc:
        return _config_findings("config", exc)
    paths = ws.paths
    if not ws.exists and not paths.workspace.is_dir():
        found.append(
            Finding(
                Level.ERROR,
                "workspace",
                f"no duragent.yaml and no {paths.workspace} here",
                "run `duragent init` or pass -c path/to/duragent.yaml",
            )
        )
        return found
    found.append(Finding(Level.OK, "config", f"{paths.config_file} loaded"))
    for warning in ws.warnings:
        found.extend(_config_findings("config", warning, Level.WARNING))
    store = read_store(ws.config.store, server_host=ws.config.server.host)
    found.extend(store.findings)

    catalog = load_catalog(
        paths.agents,
        workspace_directives=paths.directives,
        check=budget_check(paths.workspace),
    )
    for path, error in sorted(catalog.broken.items()):
        found.extend(_config_findings(f"agent {path.name}", error))
    if not catalog.agents and not catalog.broken:
        found.append(
            Finding(
                Level.WARNING,
                "agents",
                f"no agents in {paths.agents}",
                "create one with `duragent agent create NAME`",
            )
        )
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
        for warning in agent.warnings:
            found.extend(_config_findings(check, warning, Level.WARNING))
        problem = credential_problem(agent.model.provider, agent.model.base_url)
        if problem:
            found.append(Finding(Level.ERROR, check, problem, "set the variable, then restart"))
        if agent.model.provider == "offline":
            found.append(
                Finding(
                    Level.WARNING,
                    check,
                    "uses the offline model: replies are fixed text, not AI",
                    f"set spec.model in {agent.directory / 'agent.yaml'} to a real provider",
                )
            )

    config = ws.config
    found.extend(policy_findings(paths))
    found.extend(schedule_findings(paths, catalog, store.schedules))
    found.extend(chat_index_findings(paths))
    found.extend(sandbox_findings(config.sandbox, paths, api_token=config.server.api_token))
    found.extend(process_findings(config.sandbox))
    found.extend(_gateway_findings(config))
    found.extend(_external_findings(config, paths.config_file))
    for i, route in enumerate(config.routes):
        if route.agent not in catalog.agents:
            found.append(
                Finding(
                    Level.ERROR,
                    "routes",
                    f"routes[{i}] names agent '{route.agent}', which is not loaded",
                    f"use one of: {', '.join(catalog.names()) or '(no agents)'}",
                )
            )
    if not _is_loopback(config.server.host) and not config.server.api_token:
        found.append(
            Finding(
                Level.WARNING,
                "security",
                f"server.host is {config.server.host} but no api_token is set: the API will "
                "refuse every non-loopback client",
                "set server.api_token",
            )
        )

    for encoding in OFFLINE_ENCODINGS:
        try:
            get_offline_encoding(encoding)
        except DuragentError as exc:
            found.append(Finding(Level.ERROR, "tokenizer", str(exc), "reinstall duragent"))
    sessions_parent = paths.sessions if paths.sessions.exists() else paths.workspace
    if sessions_parent.exists() and not os.access(sessions_parent, os.W_OK):
        found.append(
            Finding(
                Level.ERROR,
                "storage",
                f"{sessions_parent} is not writable",
                "fix its permissions",
            )
        )
    return found


_MARK = {Level.OK: "✓", Level.WARNING: "!", Level.ERROR: "✗"}


def render_text(findings: list[Finding], *, errors_only: bool = False) -> str:
    """Human-readable report, one finding per line, with a summary (``-q``: errors only)."""
    lines = []
    for f in findings:
        if errors_only and f.level is not Level.ERROR:
            continue
        line = f"{_MARK[f.level]} [{f.check}] {f.message}"
        if f.fix:
            line += f"\n    fix: {f.fix}"
        lines.append(line)
    errors = sum(f.level is Level.ERROR for f in findings)
    warnings = sum(f.level is Level.WARNING for f in findings)
    lines.append(f"{errors} error(s), {warnings} warning(s)")
    return "\n".join(lines)


def render_json(findings: list[Finding]) -> str:
    """Machine-readable report."""
    return json.dumps(
        [
            {"level": f.level.value, "check": f.check, "message": f.message, "fix": f.fix}
            for f in findings
        ],
        indent=2,
    )


def _external_findings(config: WorkspaceConfig, config_file: Path) -> list[Finding]:
    """Each external gateway: the program ``serve`` would start, or why it cannot."""
    found: list[Finding] = []
    shadowed = config.gateways.shadowed()  # not started (a config warning says so)
    for index, gateway in enumerate(config.gateways.external):
        if index in shadowed:
            continue
        check = f"gateway {gateway.name}"
        try:
            launch = Launch.of(gateway, index, config_file.parent)
        except ConfigError as exc:
            where = f"{config_file}: {exc.field}: " if exc.field else f"{config_file}: "
            found.append(Finding(Level.ERROR, check, where + exc.reason, exc.fix))
            continue
        found.append(
            Finding(
                Level.OK,
                check,
                f"external: {' '.join(launch.argv)} (restart: {gateway.restart})",
            )
        )
    return found


def _gateway_findings(config: WorkspaceConfig) -> list[Finding]:
    """Which chat gateways ``serve`` starts, and why one would fail before it asks its platform."""
    found: list[Finding] = []
    telegram = config.gateways.telegram
    if telegram is not None and telegram.enabled:
        problem = telegram.token_problem()
        if problem:
            found.append(Finding(Level.ERROR, "gateway telegram", problem))
        else:
            where = telegram.base_url or "api.telegram.org"
            how = "webhook " + telegram.webhook_url if telegram.webhook_url else "long polling"
            found.append(Finding(Level.OK, "gateway telegram", f"enabled ({how}, {where})"))
    elif telegram is not None:
        found.append(Finding(Level.OK, "gateway telegram", "disabled (enabled: false)"))
    discord = config.gateways.discord
    if discord is not None and discord.enabled:
        problem = discord.token_problem()
        if problem:
            found.append(Finding(Level.ERROR, "gateway discord", problem))
        else:
            where = discord.base_url or "discord.com"
            found.append(Finding(Level.OK, "gateway discord", f"enabled ({where})"))
    elif discord is not None:
        found.append(Finding(Level.OK, "gateway discord", "disabled (enabled: false)"))
    if telegram is None and discord is None and not config.gateways.external:
        found.append(Finding(Level.OK, "gateways", "none configured (HTTP API only)"))
    return found
