"""``doctor``'s checks of the files ``serve`` reads later: policies, schedules, the sandbox.

Each is read with the parser the server itself uses (``tools.policy_files``,
``scheduler.model``, ``tools.sandbox``), so doctor and the server never disagree about what is
valid. A problem names its file, line when known, field and fix; doctor never writes anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from duragent.agents import AgentCatalog
from duragent.cli.findings import Finding, Level
from duragent.config.workspace import SandboxConfig, WorkspacePaths
from duragent.errors import ConfigError
from duragent.scheduler.loading import read_declared
from duragent.scheduler.model import At, Cron, Every, Schedule, parse_schedule
from duragent.store.chat_index import read_problems
from duragent.store.reference_migration import MIGRATED_SUFFIX, migration_status
from duragent.store.schedule_files import ScheduleFiles
from duragent.tools import sandbox as sandboxes
from duragent.tools.guardian import FALLBACK_FIX, containment
from duragent.tools.policy import Policy
from duragent.tools.policy_files import (
    LOCAL_POLICY_FILE,
    POLICY_FILE,
    PolicyError,
    local_policies_set_aside,
    read_policy_file,
)

__all__ = [
    "chat_index_findings",
    "migration_findings",
    "policy_findings",
    "process_findings",
    "sandbox_findings",
    "schedule_findings",
]


def _policy_files(paths: WorkspacePaths) -> list[Path]:
    """The workspace tier, then each agent folder's two tiers (only files that exist)."""
    files = [paths.policy]
    for agent in _agent_folders(paths):
        files += [agent / POLICY_FILE, agent / LOCAL_POLICY_FILE]
    return [f for f in files if f.is_file()]


def _agent_folders(paths: WorkspacePaths) -> list[Path]:
    """Each agent folder, sorted (none when the folder cannot be listed)."""
    try:
        return sorted(p for p in paths.agents.iterdir() if p.is_dir())
    except OSError:
        return []


def _describe(policy: Policy) -> str:
    text = f"mode {policy.mode}, {len(policy.allow)} allow, {len(policy.deny)} deny"
    notify = policy.notify
    if notify.enabled or notify.deliveries or notify.patterns:
        where = ", ".join(d.type for d in notify.deliveries) or "log"
        text += f", notify {'on' if notify.enabled else 'off'} ({where})"
    return text


def policy_findings(paths: WorkspacePaths) -> list[Finding]:
    """Every policy file: malformed ones are errors (their agent's turns fail), typos warnings.

    A valid file is listed only when it turns notifications on, so the report stays about
    what needs attention (and the README's sample of it short).
    """
    found: list[Finding] = []
    for file in _policy_files(paths):
        try:
            policy, warnings = read_policy_file(file)
        except PolicyError as exc:
            fix = None
            if file.name == LOCAL_POLICY_FILE:  # the server sets it aside: fails closed
                fix = (
                    "the server sets this file aside to _quarantine/ and applies none of its "
                    "allow rules (its deny rules, and its mode if stricter, are kept in a fresh "
                    "policy.local.yaml; mode ask at least if part of it cannot be read); "
                    "fix it, or delete it"
                )
            found.append(Finding(Level.ERROR, "policy", exc.render(), fix))
            continue
        if policy.notify.enabled:  # said once, as the reference never did anything with it
            found.append(Finding(Level.OK, "policy", f"{file}: {_describe(policy)}"))
        found.extend(Finding(Level.WARNING, "policy", w.render()) for w in warnings)
    for agent_dir in _agent_folders(paths):
        fix = (
            f"fix it and move it back to {agent_dir / LOCAL_POLICY_FILE} (merging the rules "
            "saved there since), or delete it"
        )
        found.extend(
            Finding(
                Level.ERROR,
                "policy",
                f"{record['moved_to']}: moved aside by the server, none of its allow rules "
                f"apply: {record['reason']}",
                fix,
            )
            for record in local_policies_set_aside([agent_dir])
        )
    return found


def _timing(schedule: Schedule) -> str:
    match schedule.timing:
        case At(at=at):
            return f"at {at.isoformat()}"
        case Every(every_seconds=seconds):
            return f"every {seconds} s"
        case Cron(expr=expr, tz=tz):
            return f"cron '{expr}'" + (f" ({tz})" if tz else "")


def schedule_findings(
    paths: WorkspacePaths,
    catalog: AgentCatalog,
    stored: Mapping[str, dict[str, Any] | None] | None = None,
) -> list[Finding]:
    """Every schedule: what the scheduler would skip, and why (it logs the same).

    ``stored``: the schedules of the database (``store.backend: postgres``, read by
    ``doctor_store.read_store``), which the server reads instead of the files; files
    left in the folder are then named as not read. Also the files the server moved aside
    (``schedules/_quarantine``, with why) and each agent's ``spec.schedules[]``.
    """
    return _stored_findings(paths, catalog, stored) + _declared_findings(catalog)


def _stored_findings(
    paths: WorkspacePaths,
    catalog: AgentCatalog,
    stored: Mapping[str, dict[str, Any] | None] | None,
) -> list[Finding]:
    directory = paths.schedules
    if stored is not None:
        found = [
            Finding(
                Level.WARNING,
                "schedules",
                f"{path}: not read: store.backend is postgres, so the schedules are in the "
                "database",
                "move them there with `duragent store copy --from file --to postgres`, or "
                "delete the file",
            )
            for path in sorted(directory.glob("*.yaml") if directory.is_dir() else [])
        ]
        for sched_id in sorted(stored):
            path = Path(f"<database>/schedules/{sched_id}")
            found.append(_schedule_finding(sched_id, path, partial(stored.get, sched_id), catalog))
        return found
    if not directory.is_dir():
        return []
    files = ScheduleFiles(directory)
    ids = set(files.ids())
    found = [
        Finding(
            Level.WARNING,
            "schedules",
            f"{path}: ignored: the file name is not a schedule id",
            "name it <id>.yaml with letters, digits, '_', '.' or '-' (not starting '.')",
        )
        for path in sorted(directory.glob("*.yaml"))
        if path.stem not in ids
    ]
    for sched_id in sorted(ids):
        found.append(
            _schedule_finding(sched_id, files.path(sched_id), partial(files.get, sched_id), catalog)
        )
    for path, reason in files.quarantined().items():
        found.append(
            Finding(
                Level.ERROR,
                "schedules",
                f"{path}: moved aside by the server and not run: {reason}",
                f"fix it and move it back into {directory}, or delete it",
            )
        )
    return found


def _declared_findings(catalog: AgentCatalog) -> list[Finding]:
    """Each agent's ``spec.schedules[]``, read as the scheduler reads them (bad ones skipped)."""
    _, problems = read_declared(catalog)
    return [Finding(Level.ERROR, "schedules", problem.render()) for problem in problems]


def _schedule_finding(
    sched_id: str,
    path: Path,
    read: Callable[[], dict[str, Any] | None],
    catalog: AgentCatalog,
) -> Finding:
    """One schedule, read with ``read`` and parsed as the scheduler parses it."""
    try:
        schedule = parse_schedule(read(), file=path)
    except yaml.YAMLError as exc:
        error = ConfigError(f"YAML syntax error: {exc}", file=path)
        return Finding(Level.ERROR, "schedules", error.render(), "fix the YAML")
    except ConfigError as exc:
        return Finding(Level.ERROR, "schedules", exc.render())
    if schedule.id != sched_id:
        problem = ConfigError(
            "does not match the file name",
            file=path,
            field="id",
            value=schedule.id,
            fix=f"set id: {sched_id} or rename the file",
        )
        return Finding(Level.ERROR, "schedules", problem.render())
    if schedule.agent not in catalog.agents and schedule.status == "active":
        problem = ConfigError(
            f"names agent '{schedule.agent}', which is not loaded: its runs will fail",
            file=path,
            field="agent",
            fix=f"use one of: {', '.join(catalog.names()) or '(no agents)'}",
        )
        return Finding(Level.ERROR, "schedules", problem.render())
    summary = f"{path}: {schedule.status}, agent {schedule.agent}, {_timing(schedule)}"
    return Finding(Level.OK, "schedules", summary)


def sandbox_findings(
    config: SandboxConfig, paths: WorkspacePaths, *, api_token: str | None = "set"
) -> list[Finding]:
    """The sandbox ``serve`` would use, tried for real with the options a tool call uses.

    ``api_token``: the server's; without one the HTTP API trusts every loopback client, and
    a tool's command that reaches loopback is one (it would act as the operator).
    """
    sandbox = sandboxes.for_workspace(config, paths)
    if not sandbox.confines:  # trust, the default: nothing to try, but worth knowing
        return [
            Finding(
                Level.WARNING,
                "sandbox",
                "sandbox.mode is trust: tools (bash, CLI tools, background jobs) run with the "
                "owner's rights for whoever gets the agent to run one (a member approving "
                "their own request too), so a command can read the keys and tokens (.env, "
                "duragent.yaml), change the agents' files (agent.yaml, prompts, policy) and "
                "call the HTTP API on loopback",
                f"set sandbox.mode: bubblewrap in {paths.config_file} and {sandboxes.INSTALL_HINT}",
            )
        ]
    try:
        sandboxes.check(sandbox, paths.config_file)
    except ConfigError as exc:
        return [Finding(Level.ERROR, "sandbox", exc.render())]
    network = "on" if sandbox.network else "off"
    found = [Finding(Level.OK, "sandbox", f"{sandbox.mode} works here (network {network})")]
    if sandbox.network and not api_token:
        found.append(
            Finding(
                Level.WARNING,
                "sandbox",
                "sandbox.network is on and server.api_token is not set: a tool's command can "
                "call the HTTP API on loopback as the operator (approve any call, reload or "
                "stop the server)",
                f"set server.api_token (and admin_token) in {paths.config_file}",
            )
        )
    return found


def process_findings(config: SandboxConfig) -> list[Finding]:
    """What keeps tool processes from outliving their command and the server, here."""
    found = containment()
    if found.guardian:
        where = ", inside bubblewrap's PID namespace" if config.mode == "bubblewrap" else ""
        return [Finding(Level.OK, "tool processes", found.summary + where)]
    level = Level.OK if config.mode == "bubblewrap" else Level.WARNING
    return [Finding(level, "tool processes", found.summary, FALLBACK_FIX)]


def chat_index_findings(paths: WorkspacePaths) -> list[Finding]:
    """``sessions/chats.jsonl`` entries the server skips, and index files it set aside.

    Read only: the server moves a damaged index aside at its next start and maps the chats
    again from the session snapshots (``store.chat_index``).
    """
    return [
        Finding(
            Level.WARNING,
            "chat index",
            f"{p['record']}: skipped: {p['reason']}",
            "nothing to do: the chat starts a new session or is recovered from its snapshot; "
            "delete files in sessions/_quarantine/chats.* once read",
        )
        for p in read_problems(paths.sessions)
    ]


def migration_findings(paths: WorkspacePaths) -> list[Finding]:
    """Sessions converted from the reference's ``state.json``, and those still to convert.

    Read only: ``serve`` converts them at start (``store.reference_migration``).
    """
    status = migration_status(paths.sessions)
    found: list[Finding] = []
    if status.migrated:
        found.append(
            Finding(
                Level.OK,
                "migration",
                f"{len(status.migrated)} session(s) migrated from the reference's state.json "
                f"to state.yaml; originals kept as {paths.sessions}/<id>/state.json"
                f"{MIGRATED_SUFFIX} (back: duragent session export ID --format reference)",
            )
        )
    if status.waiting:
        found.append(
            Finding(
                Level.OK,
                "migration",
                f"{len(status.waiting)} session(s) still in the reference's state.json: the "
                "next start converts them",
            )
        )
    return found
