"""``duragent doctor``: check a workspace and print every problem with its fix.

Each finding is an error (the workspace will not work as configured; exit code 1), a warning
(it works, but probably not as intended) or ok. Nothing is modified.
"""

from __future__ import annotations

import ipaddress
import json
import os
from pathlib import Path

from duragent.agents import AgentCatalog, load_catalog
from duragent.cli.doctor_agents import agent_findings, config_findings
from duragent.cli.doctor_files import (
    chat_index_findings,
    migration_findings,
    policy_findings,
    process_findings,
    sandbox_findings,
    schedule_findings,
)
from duragent.cli.doctor_store import StoreReport, read_store
from duragent.cli.findings import Finding, Level
from duragent.config import WorkspaceConfig
from duragent.config.checkup import WorkspaceCheck, check_workspace, is_stand_in
from duragent.config.wording import did_you_mean
from duragent.context.offline_encodings import OFFLINE_ENCODINGS, get_offline_encoding
from duragent.errors import ConfigError, DuragentError
from duragent.gateways.external.launch import Launch
from duragent.turns.agent_budget import budget_check

__all__ = ["Finding", "Level", "render_json", "render_text", "run_checks"]


def _is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run_checks(config_file: Path) -> list[Finding]:
    """Every check, in order; never raises for a problem in the workspace.

    Every independent problem is said in one run: a ``duragent.yaml`` with errors is checked
    on without the fields in error (their defaults instead), and each broken agent is read
    through to its end (``doctor_agents``).
    """
    found: list[Finding] = []
    check = check_workspace(config_file)
    found.extend(config_findings("config", check.errors))
    ws = check.loaded
    if ws is None:
        return found
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
    if not check.errors:
        found.append(Finding(Level.OK, "config", f"{paths.config_file} loaded"))
    found.extend(config_findings("config", check.warnings, Level.WARNING))
    if is_stand_in(ws.config.store.dsn):  # its unset variable is said above
        store = StoreReport([])
    else:
        store = read_store(ws.config.store, server_host=ws.config.server.host)
    found.extend(store.findings)

    catalog = load_catalog(
        paths.agents,
        workspace_directives=paths.directives,
        check=budget_check(paths.workspace),
    )
    found.extend(agent_findings(paths, catalog))

    config = ws.config
    found.extend(policy_findings(paths))
    found.extend(schedule_findings(paths, catalog, store.schedules))
    found.extend(chat_index_findings(paths))
    found.extend(migration_findings(paths))
    found.extend(sandbox_findings(config.sandbox, paths, api_token=config.server.api_token))
    found.extend(process_findings(config.sandbox))
    found.extend(_gateway_findings(config))
    found.extend(_external_findings(config, paths.config_file))
    found.extend(_route_findings(check, catalog))
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
        if index in shadowed or any(map(is_stand_in, [gateway.command, *gateway.args])):
            continue  # not started, or its unset variable is said already
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
        problem = None if is_stand_in(telegram.bot_token) else telegram.token_problem()
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
        problem = None if is_stand_in(discord.bot_token) else discord.token_problem()
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


def _route_findings(check: WorkspaceCheck, catalog: AgentCatalog) -> list[Finding]:
    """Each rule naming an agent that is not loaded (its chats are not answered)."""
    assert check.loaded is not None  # checked by the caller
    found = []
    names = catalog.names()
    for i, route in enumerate(check.loaded.config.routes):
        if route.agent in catalog.agents:
            continue
        listed = f"use one of: {', '.join(names)}" if names else "add the agent"
        close = did_you_mean(route.agent, names)
        broken = route.agent in {path.name for path in catalog.broken}
        problem = ConfigError(
            f"names agent '{route.agent}', which is not loaded"
            + (" (its errors are above)" if broken else ""),
            file=check.doc.file if check.doc else None,
            line=check.doc.line_of(("routes", i, "agent")) if check.doc else None,
            field=f"routes[{i}].agent",
            fix="fix its errors" if broken else f"{close} ({listed})" if close else listed,
        )
        found.append(Finding(Level.ERROR, "routes", problem.render()))
    return found
