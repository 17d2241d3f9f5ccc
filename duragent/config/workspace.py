"""``duragent.yaml``: the workspace configuration (every field optional).

Field names and defaults follow the reference so its workspaces open unchanged. Relative paths
are resolved against the directory of the config file, not the current directory, so
``duragent serve -c some/dir/duragent.yaml`` works from anywhere. A missing file means all
defaults, rooted at the directory where it would have been.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BeforeValidator,
    Field,
    field_validator,
)

from duragent.config.env_scope import expand_needed
from duragent.config.envvars import expand_env
from duragent.config.fields import unsupported_warnings
from duragent.config.gateways import (
    DISCORD_TOKEN_HELP,
    TELEGRAM_TOKEN_HELP,
    DiscordConfig,
    ExternalGatewayConfig,
    GatewayConfig,
    GatewaysConfig,
    RestartPolicy,
    RouteConfig,
    RouteMatch,
    TelegramConfig,
    route_warnings,
)
from duragent.config.hosts import check_host_name, check_origin
from duragent.config.media import MediaConfig
from duragent.config.section import Section
from duragent.config.store import StoreConfig
from duragent.config.validation import (
    unknown_key_warnings,
    validate_document,
)
from duragent.config.yamlio import LocatedYaml, load_yaml_text, read_text
from duragent.errors import ConfigError

__all__ = [
    "CONFIG_FILENAME",
    "DISCORD_TOKEN_HELP",
    "TELEGRAM_TOKEN_HELP",
    "CompactionMode",
    "DiscordConfig",
    "ExternalGatewayConfig",
    "GatewayConfig",
    "GatewaysConfig",
    "MediaConfig",
    "RestartPolicy",
    "RouteConfig",
    "RouteMatch",
    "SandboxConfig",
    "SchedulerConfig",
    "ServerConfig",
    "TelegramConfig",
    "WorkspaceConfig",
    "WorkspacePaths",
    "load_workspace",
    "workspace_paths",
    "workspace_warnings",
]

CONFIG_FILENAME = "duragent.yaml"

CompactionMode = Literal["discard", "archive", "disabled"]


def _auto_or_count(value: object) -> object:
    """``auto`` or a whole number from 1 to 1024 (one clear message for both forms).

    ``"8"`` and ``8.0`` are accepted as 8, as every other number field accepts them.
    """
    if value == "auto":
        return value
    whole = (isinstance(value, str) and value.strip().isdigit()) or (
        isinstance(value, float) and value.is_integer()
    )
    number = int(value) if whole else value  # type: ignore[call-overload]
    if type(number) is int and 1 <= number <= 1024:
        return number
    raise ValueError("must be 'auto' or a whole number from 1 to 1024")


class ServerConfig(Section):
    """``server:``: the HTTP front end."""

    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    request_timeout_seconds: int = Field(default=300, gt=0)
    idle_timeout_seconds: int = Field(default=60, gt=0)
    keep_alive_interval_seconds: int = Field(default=15, gt=0)
    max_connections: int = Field(default=1024, gt=0)
    admin_token: str | None = None
    api_token: str | None = None
    metrics: bool = True
    """Count turns, model calls, the store, gateways and the scheduler, and serve them at
    ``/metrics`` (Prometheus text format; ``observability.metrics``). Off: nothing is recorded."""
    pin_python_threads: bool = True
    """Keep the server's Python threads on one CPU (faster hand-overs; see ``duragent.cpu``).
    Programs that tools start still get every CPU."""
    allowed_hosts: tuple[str, ...] = ()
    """Extra ``Host`` names served in loopback mode (no token), besides localhost, 127.x.x.x,
    [::1] and ``*.localhost``: e.g. a name in /etc/hosts that points at 127.0.0.1."""
    allowed_origins: tuple[str, ...] = ()
    """Extra browser origins (``scheme://host[:port]``) allowed to call the API, besides
    loopback ones and the server's own."""
    header_timeout_seconds: float = Field(default=10, gt=0, le=3600)
    """A request's line and headers must arrive within this time of its first byte (or of
    the connection opening): a slow head gets 408 and the connection is closed."""
    body_timeout_seconds: float = Field(default=30, gt=0, le=3600)
    """A request's body must arrive within this time of its head (time the server spends not
    reading, e.g. waiting for a slot, does not count): otherwise 408 and close."""
    connection_idle_timeout_seconds: float = Field(default=15, gt=0, le=3600)
    """A keep-alive connection with no request under way is closed after this long."""

    @field_validator("allowed_hosts")
    @classmethod
    def _check_hosts(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(check_host_name(entry) for entry in value)

    @field_validator("allowed_origins")
    @classmethod
    def _check_origins(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(check_origin(entry) for entry in value)


class SessionsConfig(Section):
    """``sessions:``: defaults for every session (agents may override)."""

    ttl_hours: int = Field(default=168, ge=0)
    compaction: CompactionMode = "archive"
    """Where events older than the checkpoint go ("rollover" in the code; the file keeps the
    reference's name, and "compaction" is left to LLM summaries)."""
    max_live_actors: int = Field(default=1000, gt=0)
    """At most this many session actors (threads) run at once; idle ones restart from disk."""
    idle_actor_seconds: float = Field(default=600, gt=0)
    """A session actor idle this long is stopped (its state is on disk)."""
    active_actors: Annotated[int | Literal["auto"], BeforeValidator(_auto_or_count)] = "auto"
    """How many session actors may work at once (others queue on the event loop). ``auto``
    adapts between 8 and 32 so that few run Python at once while the rest wait on the disk:
    a slow disk (fsync ≥ 1 ms) writes more in parallel, a fast one keeps the event loop
    quick. A number fixes it. See specs/…durable-sessions.md."""


class SchedulerConfig(Section):
    """``scheduler:``: the scheduled jobs front end (see specs/…scheduler.md)."""

    enabled: bool = True
    max_concurrent_runs: int = Field(default=5, ge=1, le=1000)
    """At most this many scheduled runs at once; due runs beyond wait their turn."""
    one_shot_grace_seconds: float = Field(default=86400, ge=0)
    """A one-shot (``at``) missed while the server was down still runs on start if it is at
    most this late; older ones are recorded as missed."""
    recurring_grace_seconds: float = Field(default=60, ge=0)
    """A recurring due time is run late by at most this much (a restart, a busy server);
    later, it is recorded as missed and the schedule waits for its next due time."""


class _PathSection(Section):
    path: str | None = None


class ServicesConfig(Section):
    """``services:``: where the session store lives."""

    session: _PathSection = _PathSection()


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\*?")


class SandboxConfig(Section):
    """``sandbox:``: where tool processes run (``duragent.tools.sandbox``, docs/sandbox).

    ``trust`` (the default, as in the reference) runs them as the server's own processes.
    ``bubblewrap`` runs each in ``bwrap``: the system read-only, the agent's folder and a
    per-session scratch folder writable, the rest of the workspace invisible. ``docker`` is
    refused when ``serve`` starts (the reference only warned and ran tools unsandboxed).
    """

    mode: Literal["trust", "bubblewrap", "docker"] = "trust"
    network: bool = False
    """Ours: whether sandboxed processes may use the network (off: a private, empty one)."""
    env: tuple[str, ...] = ()
    """Ours: more environment variables passed into the sandbox (``NAME``, or ``PREFIX_*``;
    a ``*`` never passes a name that looks like a secret, e.g. ``*_TOKEN``)."""

    @field_validator("env")
    @classmethod
    def _check_env(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not _ENV_NAME.fullmatch(name):
                raise ValueError(
                    f"{name!r} is not a variable name (letters, digits and _, optionally "
                    "ending in * to pass every variable starting with what comes before)"
                )
        return value


class WorkspaceConfig(Section):
    """The whole of ``duragent.yaml``."""

    workspace: str = ".duragent"
    agents_dir: str | None = None
    services: ServicesConfig = ServicesConfig()
    world_memory: _PathSection = _PathSection()
    server: ServerConfig = ServerConfig()
    sessions: SessionsConfig = SessionsConfig()
    gateways: GatewaysConfig = GatewaysConfig()
    routes: list[RouteConfig] = []  # noqa: RUF012 (a pydantic field: copied per instance)
    sandbox: SandboxConfig = SandboxConfig()
    scheduler: SchedulerConfig = SchedulerConfig()
    store: StoreConfig = StoreConfig()
    media: MediaConfig = MediaConfig()


@dataclass(frozen=True, slots=True)
class WorkspacePaths:
    """Absolute paths derived from the config (reference §4.3 layout)."""

    root: Path
    config_file: Path
    workspace: Path
    agents: Path
    sessions: Path
    schedules: Path
    world_memory: Path
    directives: Path
    tools: Path
    policy: Path
    logs: Path

    @property
    def workspace_hash(self) -> str:
        """sha256 of the canonical root path; lets a client tell two workspaces apart."""
        return hashlib.sha256(str(self.root.resolve()).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class LoadedWorkspace:
    """A validated config, its resolved paths and any warnings found while loading."""

    config: WorkspaceConfig
    paths: WorkspacePaths
    warnings: tuple[ConfigError, ...]
    exists: bool


def _shadowed_warnings(config: WorkspaceConfig, doc: LocatedYaml) -> list[ConfigError]:
    found = []
    for i in config.gateways.shadowed():
        name = config.gateways.external[i].name
        found.append(
            ConfigError(
                f"external gateway {name!r} is not started: the built-in gateways.{name} has "
                "the same name and is served instead",
                file=doc.file,
                line=doc.line_of(("gateways", "external", i, "name")),
                field=f"gateways.external[{i}].name",
                value=name,
                fix=f"rename it (and the routes' match.gateway that mean it), or set "
                f"gateways.{name}.enabled: false to serve it instead of the built-in",
            )
        )
    return found


def _resolve(base: Path, value: str | None, default: Path) -> Path:
    if not value:
        return default
    p = Path(value).expanduser()
    return p if p.is_absolute() else (base / p)


def _read(path: Path, needed: Collection[str] | None) -> tuple[WorkspaceConfig, LocatedYaml]:
    text = read_text(path)
    if needed is None:
        doc = load_yaml_text(expand_env(text, file=path), file=path)
        return validate_document(WorkspaceConfig, doc, what="duragent.yaml"), doc
    doc, unset = expand_needed(text, file=path, needed=needed)
    try:
        return validate_document(WorkspaceConfig, doc, what="duragent.yaml"), doc
    except ConfigError:
        if unset:  # what is left may not validate without them (a route missing a field)
            raise unset[0] from None
        raise


def load_workspace(
    config_file: Path | str = CONFIG_FILENAME, *, needed: Collection[str] | None = None
) -> LoadedWorkspace:
    """Load and validate ``duragent.yaml``; a missing file yields all defaults.

    Args:
        config_file: the file, or its directory.
        needed: the top-level sections (dotted prefixes, e.g. ``("server",)``) whose
            ``${VAR}``s must be set; unset ones elsewhere leave their field out
            (``config.env_scope``). None, for ``serve`` and ``doctor``: every one.
    """
    path = Path(config_file).expanduser().absolute()
    if path.is_dir():
        path = path / CONFIG_FILENAME
    exists = path.is_file()
    if exists:
        config, doc = _read(path, needed)
        warnings = workspace_warnings(config, doc)
    else:
        config = WorkspaceConfig()
        warnings = ()
    paths = workspace_paths(config, path)
    return LoadedWorkspace(config=config, paths=paths, warnings=warnings, exists=exists)


def workspace_warnings(config: WorkspaceConfig, doc: LocatedYaml) -> tuple[ConfigError, ...]:
    """What a valid ``duragent.yaml`` still gets wrong, each with its line.

    Unknown fields (likely typos), fields with no effect, gateways not started, routes that
    can never match.
    """
    return (
        *unknown_key_warnings(config, doc),
        *unsupported_warnings("workspace", doc),
        *_shadowed_warnings(config, doc),
        *route_warnings(config.gateways, config.routes, doc),
    )


def workspace_paths(config: WorkspaceConfig, config_file: Path) -> WorkspacePaths:
    """The workspace's folders, ``config``'s relative paths taken from ``config_file``'s."""
    root = config_file.parent
    ws = _resolve(root, config.workspace, root / ".duragent")
    sessions = _resolve(root, config.services.session.path, ws / "sessions")
    return WorkspacePaths(
        root=root,
        config_file=config_file,
        workspace=ws,
        agents=_resolve(root, config.agents_dir, ws / "agents"),
        sessions=sessions,
        schedules=sessions.parent / "schedules",
        world_memory=_resolve(root, config.world_memory.path, ws / "memory" / "world"),
        directives=ws / "directives",
        tools=ws / "tools",
        policy=ws / "policy.yaml",
        logs=ws / "logs",
    )
