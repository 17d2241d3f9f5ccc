"""The composition root: builds every service from a workspace, starts and stops them in order.

The server is the list :attr:`Runtime.SERVICES`: each entry names a service, says whether it
is essential and builds it (or returns ``None`` when ``duragent.yaml`` or the command line
does not ask for it). A :class:`~duragent.core.lifecycle.ServiceStack` starts them in list
order and stops them in reverse, so nothing accepts work that a stopped service would have to
do: front ends stop first, then background tasks are cancelled, then every session actor
flushes and snapshots, then provider connections close, and the workspace lock goes last.
Adding a front end (Telegram, Discord, the scheduler) is one entry before ``http``, selected
by its ``duragent.yaml`` section. SIGINT and SIGTERM request a graceful stop; a second SIGINT
during shutdown exits at once. See ``specs/202611240140.runtime-services.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable, Mapping
from typing import ClassVar

from duragent import __version__
from duragent.agents import Agent, AgentCatalog, load_catalog
from duragent.config import LoadedWorkspace, WorkspaceConfig
from duragent.core.lifecycle import (
    Entry,
    Hooks,
    Service,
    ServiceStack,
    ServiceStopError,
    TaskService,
)
from duragent.core.tasks import BackgroundTasks
from duragent.errors import ConfigError
from duragent.frontkit import (
    ChatGateway,
    OutboundPort,
    ProcessNotices,
    SessionNotices,
    WebhookReceiver,
)
from duragent.gateways.http import HttpServer, build_app
from duragent.llm import credential_problem
from duragent.scheduler import (
    Destination,
    ScheduleDesk,
    SchedulerSettings,
    Schedules,
    ScheduleTool,
)
from duragent.session import RegistrySettings, SessionRegistry
from duragent.session.descriptors import budget, connection_cap
from duragent.session.gate import MAX_ACTIVE_ASKS, tune_interpreter
from duragent.session.reader import RegistrySessionReader
from duragent.store import SessionStore
from duragent.store.serve_lock import ServeLock
from duragent.tools import sandbox as sandboxes
from duragent.tools.base import Tool
from duragent.tools.policy_check import agent_policy_files, check_policy_file
from duragent.tools.processes import BackgroundProcessTool, ProcessRegistry
from duragent.turns import TurnRunner
from duragent.turns.agent_budget import budget_check
from duragent.turns.providers import ProviderPool

__all__ = ["Runtime"]

log = logging.getLogger(__name__)

TTL_SWEEP_SECONDS = 3600.0

GatewayBuilder = Callable[..., ChatGateway]
"""A chat platform's ``build_<name>_gateway(config, turns, tasks, *, catalog, routes,
request_timeout)`` (imported only when the platform is configured)."""


class Runtime:
    """Everything ``duragent serve`` runs, for one workspace."""

    def __init__(
        self,
        workspace: LoadedWorkspace,
        *,
        host: str | None = None,
        port: int | None = None,
        agents_dir: str | None = None,
        env: Mapping[str, str] | None = None,
        registry_settings: RegistrySettings | None = None,
        ephemeral: float | None = None,
    ) -> None:
        self.workspace = workspace
        self._config = workspace.config
        self.version = __version__
        self._untune: Callable[[], None] | None = None
        self.workspace_hash = workspace.paths.workspace_hash
        config = workspace.config
        self._host = host or config.server.host
        self._port = config.server.port if port is None else port
        paths = workspace.paths
        self._agents_dir = paths.agents if agents_dir is None else paths.root / agents_dir
        self._env = env
        self._catalog = AgentCatalog()
        self._http: HttpServer | None = None
        self._gateways: dict[str, ChatGateway] = {}
        self._stop = asyncio.Event()
        self._ephemeral = ephemeral
        self._services = ServiceStack()
        self._tasks = BackgroundTasks()
        self._lock: ServeLock | None = None
        self._connection_cap: int | None = None
        self._schedules: Schedules | None = None
        self.registry = SessionRegistry(
            SessionStore(paths.sessions),
            registry_settings
            or RegistrySettings(
                default_rollover=config.sessions.compaction,
                max_live=config.sessions.max_live_actors,
                idle_seconds=config.sessions.idle_actor_seconds,
                active_asks=None
                if config.sessions.active_actors == "auto"
                else config.sessions.active_actors,
            ),
        )
        self._sandbox = sandboxes.for_workspace(config.sandbox, paths)
        self.providers = ProviderPool(
            env=env, idle_timeout_seconds=config.server.idle_timeout_seconds
        )
        self._turns = TurnRunner(
            self.registry,
            agents=lambda: self._catalog,
            providers=self.providers,
            workspace_dir=paths.workspace,
            world_memory_dir=paths.world_memory,
            policy_file=paths.policy,
            sessions=RegistrySessionReader(self.registry),
            extra_tools=self._extra_tools,
            env=env,
            sandbox=self._sandbox,
        )
        self.processes = ProcessRegistry(
            paths.workspace / "processes",
            events=ProcessNotices(SessionNotices(self._turns, self.outbound_port), self._unlink),
        )

    # --- HttpServices ---------------------------------------------------------------------

    @property
    def catalog(self) -> AgentCatalog:
        """The agents currently served."""
        return self._catalog

    @property
    def config(self) -> WorkspaceConfig:
        """The workspace configuration (``max_connections`` as the descriptor budget allows)."""
        return self._config

    @property
    def turns(self) -> TurnRunner:
        """The one turn runner."""
        return self._turns

    @property
    def tasks(self) -> BackgroundTasks:
        """The one owner of background tasks, injected into every front end."""
        return self._tasks

    @property
    def schedules(self) -> Schedules | None:
        """The scheduler front end (None when ``scheduler.enabled`` is false)."""
        return self._schedules

    @property
    def schedule_desk(self) -> ScheduleDesk | None:
        """The scheduler's JSON operations, for HTTP."""
        return ScheduleDesk(self._schedules) if self._schedules is not None else None

    @property
    def http_port(self) -> int | None:
        """The bound HTTP port once started (useful with port 0)."""
        return self._http.port if self._http else None

    def starting(self) -> str | None:
        """Why a first message would wait (``/readyz``): the providers' SDKs still loading."""
        if self.providers.warming:
            return "the model providers are still starting (their SDKs are being loaded)"
        return None

    def reload_agents(self) -> AgentCatalog:
        """Re-read the agents directory and swap the catalog atomically."""
        self._catalog = load_catalog(
            self._agents_dir,
            workspace_directives=self.workspace.paths.directives,
            env=self._env,
            check=budget_check(self.workspace.paths.workspace),
        )
        for path, error in self._catalog.broken.items():
            log.error("agent %s not loaded: %s", path.name, error)
        self._report_files()
        for agent in self._catalog.agents.values():
            problem = credential_problem(agent.model.provider, agent.model.base_url, self._env)
            if problem:  # as doctor says it; otherwise the first turn is the first to know
                log.warning(
                    "agent '%s' cannot call its model: %s (its turns fail until then)",
                    agent.name,
                    problem,
                )
            if agent.model.provider == "offline":
                log.warning(
                    "agent '%s' uses the offline model: replies are fixed text, not AI "
                    "(set spec.model in %s to use a real model)",
                    agent.name,
                    agent.directory / "agent.yaml",
                )
        return self._catalog

    def _report_files(self) -> None:
        """Say what ``doctor`` says of the agents' files: warnings, and broken policy files."""
        policies = [self.workspace.paths.policy]
        for agent in self._catalog.agents.values():
            for warning in agent.warnings:
                log.warning("agent '%s': %s", agent.name, warning)
            policies.extend(agent_policy_files(agent.directory))
        for file in policies:
            errors, warnings = check_policy_file(file)
            for error in errors:
                log.error("policy file: %s (turns of its agents fail until it is fixed)", error)
            for warning in warnings:
                log.warning("policy file: %s", warning)

    def request_shutdown(self) -> bool:
        """Ask ``run_until_stopped`` to stop gracefully; False if already stopping."""
        if self._stop.is_set():
            return False
        self._stop.set()
        return True

    # --- lifecycle ------------------------------------------------------------------------

    def _ttl_hours(self, agent_name: str) -> float | None:
        agent = self._catalog.agents.get(agent_name)
        if agent is not None and agent.spec.session.ttl_hours is not None:
            return agent.spec.session.ttl_hours or None
        return self.config.sessions.ttl_hours or None

    async def _sweep_ttl(self) -> None:
        while True:
            await asyncio.sleep(TTL_SWEEP_SECONDS)
            try:
                await self.registry.expire(self._ttl_hours)
                sessions = self.workspace.paths.sessions
                await asyncio.to_thread(sandboxes.prune_scratch, self._sandbox, sessions)
            except Exception:
                log.exception("TTL sweep failed")

    async def _exit_when_idle(self, seconds: float) -> None:
        """``--ephemeral``: stop after ``seconds`` with no live session (a launcher's server)."""
        loop = asyncio.get_running_loop()
        idle_since = loop.time()
        while True:
            await asyncio.sleep(min(5.0, seconds / 4))
            if self.registry.live_count:
                idle_since = loop.time()
            elif loop.time() - idle_since >= seconds:
                log.info("no sessions for %gs (--ephemeral): stopping", seconds)
                self.request_shutdown()
                return

    async def start(self) -> None:
        """Start every service of :attr:`SERVICES` in order (the workspace lock first).

        The lock comes first: a second server fails before it reads or writes anything. An
        essential service that fails stops the ones already started and raises
        :class:`~duragent.core.lifecycle.ServiceStartError` naming it.
        """
        await self._services.start(self.SERVICES, self)
        port = self._http.port if self._http is not None else None
        names = ", ".join(self._catalog.names()) or "(none)"
        log.info(
            "duragent %s serving %s: agents %s; http://%s:%s",
            self.version,
            self.workspace.paths.root,
            names,
            self._host,
            port,
        )

    # --- the services, in start order (SERVICES below) --------------------------------------

    async def _lock_workspace(self) -> None:
        paths = self.workspace.paths
        self._lock = ServeLock.acquire(paths.workspace, paths.sessions)

    async def _unlock_workspace(self) -> None:
        if self._lock is not None:  # last: every actor has flushed and stopped writing
            self._lock.release()
            self._lock = None

    async def _tune(self) -> None:
        self._budget_descriptors()
        self._untune = tune_interpreter(pin_threads=self.config.server.pin_python_threads)

    async def _untune_interpreter(self) -> None:
        if self._untune is not None:
            self._untune()
            self._untune = None

    async def _check_sandbox(self) -> None:
        """``sandbox.mode`` other than trust: refuse to serve unless it confines commands here.

        Fail closed: a workspace configured for a sandbox never runs its tools unconfined.
        The trial command runs off the event loop (it starts bwrap).
        """
        if self._sandbox.confines:
            config_file = self.workspace.paths.config_file
            await asyncio.to_thread(sandboxes.check, self._sandbox, config_file)
            log.info(
                "tools run in a %s sandbox (network %s)",
                self._sandbox.mode,
                "on" if self._sandbox.network else "off",
            )

    async def _load_agents(self) -> None:
        for warning in self.workspace.warnings:
            log.warning("%s", warning)
        self.reload_agents()

    async def _start_http(self) -> None:
        http = HttpServer(
            build_app(self),
            host=self._host,
            port=self._port,
            max_open_connections=self._connection_cap,
        )
        await http.start()
        self._http = http
        if self._lock is not None:
            self._lock.publish(f"http://{_url_host(self._host)}:{http.port}")

    async def _stop_http(self) -> None:
        http, self._http = self._http, None
        if http is not None:
            await http.stop()

    SERVICES: ClassVar[tuple[Entry[Runtime], ...]] = (
        Entry("workspace-lock", lambda rt: Hooks(rt._lock_workspace, rt._unlock_workspace)),
        Entry("interpreter", lambda rt: Hooks(rt._tune, rt._untune_interpreter)),
        Entry("sandbox", lambda rt: Hooks(rt._check_sandbox)),
        Entry("agents", lambda rt: Hooks(rt._load_agents)),
        Entry("providers", lambda rt: Hooks(stop=rt.providers.aclose)),
        Entry("sessions", lambda rt: Hooks(rt.registry.open, rt.registry.aclose)),
        Entry("background-tasks", lambda rt: rt.tasks),
        Entry("ttl-sweep", lambda rt: TaskService("ttl-sweep", rt._sweep_ttl), essential=False),
        Entry(
            "provider-warmup",
            lambda rt: TaskService(
                "provider-warmup", lambda: rt.providers.warm(rt.catalog.agents.values())
            ),
            essential=False,
        ),
        Entry("ephemeral", lambda rt: rt._ephemeral_service()),
        # Front ends: each selected by its duragent.yaml section (gateways.telegram, …) and
        # optional, so one platform being down never takes the others down. HTTP is what
        # `serve` is asked to serve: essential, so a busy port still fails the command.
        Entry("telegram", lambda rt: rt._telegram_service(), essential=False),
        Entry("discord", lambda rt: rt._discord_service(), essential=False),
        Entry("external-gateways", lambda rt: rt._external_service(), essential=False),
        # After the chat gateways: a due run delivers through their outbound ports.
        Entry("scheduler", lambda rt: rt._scheduler_service(), essential=False),
        # After the gateways and the scheduler: a job that ended while the server was down is
        # reported at start (a turn in its session, delivered to its chat) and its linked
        # schedules cancelled. Stopped before them.
        Entry(
            "processes",
            lambda rt: Hooks(rt.processes.start, rt.processes.stop),
            essential=False,
        ),
        Entry("http", lambda rt: Hooks(rt._start_http, rt._stop_http)),
    )
    """Every service of the server, in start order (stop order is the reverse)."""

    def _telegram_service(self) -> Service | None:
        """``gateways.telegram`` (enabled): the Telegram front end (its SDK imported only now)."""

        def builder() -> GatewayBuilder:
            from duragent.gateways.telegram import build_telegram_gateway

            return build_telegram_gateway

        return self._chat_platform("telegram", "python-telegram-bot", builder)

    def _discord_service(self) -> Service | None:
        """``gateways.discord`` (enabled): the Discord front end (its SDK imported only now)."""

        def builder() -> GatewayBuilder:
            from duragent.gateways.discord import build_discord_gateway

            return build_discord_gateway

        return self._chat_platform("discord", "discord.py", builder)

    def _chat_platform(
        self, name: str, sdk: str, builder: Callable[[], GatewayBuilder]
    ) -> Service | None:
        """The ``gateways.<name>`` front end when enabled; ``builder`` imports its SDK."""
        config = getattr(self._config.gateways, name)
        if config is None or not config.enabled:
            return None
        try:
            build = builder()
        except ImportError as exc:
            raise ConfigError(
                f"gateways.{name} is enabled but {sdk} is not installed: "
                f"pip install 'duragent[{name}]'"
            ) from exc
        gateway = build(
            config,
            self._turns,
            self._tasks,
            catalog=lambda: self._catalog,
            routes=self._config.routes,
            request_timeout=self._config.server.request_timeout_seconds,
        )
        self._gateways[gateway.name] = gateway
        return gateway

    def _external_service(self) -> Service | None:
        """``gateways.external[]``: every external gateway, one child process each."""
        shadowed = self._config.gateways.shadowed()  # reported by load_workspace
        configs = [
            (i, c) for i, c in enumerate(self._config.gateways.external) if i not in shadowed
        ]
        if not configs:
            return None
        from duragent.gateways.external import ExternalGateways, build_external_gateway

        gateways = [
            build_external_gateway(
                config,
                index,
                self.workspace.paths.root,
                self._turns,
                self._tasks,
                catalog=lambda: self._catalog,
                routes=self._config.routes,
                request_timeout=self._config.server.request_timeout_seconds,
            )
            for index, config in configs
        ]
        for gateway in gateways:
            self._gateways[gateway.name] = gateway
        return ExternalGateways(gateways)

    def _scheduler_service(self) -> Service | None:
        """``scheduler`` (enabled by default): schedule files, declared schedules, the loop."""
        config = self._config.scheduler
        if not config.enabled:
            return None
        self._schedules = Schedules(
            self.workspace.paths.schedules,
            agents=lambda: self._catalog,
            settings=SchedulerSettings(
                max_concurrent_runs=config.max_concurrent_runs,
                one_shot_grace_seconds=config.one_shot_grace_seconds,
                recurring_grace_seconds=config.recurring_grace_seconds,
            ),
            turns=self._turns,
            outbound=self.outbound_port,
        )
        return self._schedules

    def outbound_port(self, gateway: str) -> OutboundPort | None:
        """What sends into chats of ``gateway`` (None: not configured or not started)."""
        served = self._gateways.get(gateway)
        return served.outbound if served is not None else None

    def _extra_tools(self, agent: Agent, session_id: str) -> list[Tool]:
        """``background_process`` and ``schedule`` for agents that list them.

        ``schedule`` is not offered in a scheduled task's own turn.
        """
        listed = {t.name for t in agent.spec.tools if t.type == "builtin"}
        tools: list[Tool] = []
        if "background_process" in listed:
            tools.append(BackgroundProcessTool(self.processes, self._chat_pair))
        schedules = self._schedules
        if schedules is None or "schedule" not in listed:
            return tools
        if schedules.chat is not None and session_id in schedules.chat.task_sessions:
            return tools
        return [*tools, ScheduleTool(schedules, self._chat_of)]

    async def _chat_pair(self, session_id: str) -> tuple[str, str] | None:
        chat = await self._chat_of(session_id)
        return (chat.gateway, chat.chat_id) if chat is not None else None

    def _unlink(self, process_handle: str, agent: str) -> list[str]:
        """Cancel the schedules linked to a background job that ended (scheduler running)."""
        if self._schedules is None:
            return []
        return self._schedules.cancel_linked(process_handle, agent=agent)

    async def _chat_of(self, session_id: str) -> Destination | None:
        info = await self.registry.handle(session_id).info()
        if info.gateway and info.gateway_chat_id:
            return Destination(info.gateway, info.gateway_chat_id)
        return None

    def gateway_states(self) -> dict[str, str]:
        """Each chat gateway's state (``/readyz``)."""
        return {name: gateway.state for name, gateway in self._gateways.items()}

    def webhooks(self) -> dict[str, WebhookReceiver]:
        """The webhook paths chat gateways receive updates on (served by HTTP)."""
        return dict(gw.webhook for gw in self._gateways.values() if gw.webhook is not None)

    def _ephemeral_service(self) -> Service | None:
        """``--ephemeral``: stop when idle (asked for on the command line, so essential)."""
        seconds = self._ephemeral
        if not seconds:
            return None
        return TaskService("ephemeral", lambda: self._exit_when_idle(seconds))

    def _budget_descriptors(self) -> None:
        """Raise the open-file limit; cap live actors at what fits beside the connections."""
        asks = self.config.sessions.active_actors
        planned = budget(
            max_live=self.registry.settings.max_live,
            max_connections=self.config.server.max_connections,
            active_asks=MAX_ACTIVE_ASKS if asks == "auto" else asks,
        )
        if planned.raised_from != planned.plan.limit:
            log.info(
                "open-file limit raised from %d to %d", planned.raised_from, planned.plan.limit
            )
        for warning in planned.warnings:
            log.warning("%s", warning)
        self.registry.live_cap = min(self.registry.live_cap, planned.plan.actors)
        self._connection_cap = connection_cap(planned.plan)
        server = self._config.server
        if planned.plan.connections < server.max_connections:  # turns beyond wait for a slot
            lowered = server.model_copy(update={"max_connections": planned.plan.connections})
            self._config = self._config.model_copy(update={"server": lowered})

    async def aclose(self) -> None:
        """Stop every service, in reverse start order; one failing does not stop the rest.

        Raises :class:`~duragent.core.lifecycle.ServiceStopError` naming the services that
        failed to stop, once all of them have been stopped.
        """
        failures = await self._services.stop()
        if failures:
            raise ServiceStopError(failures)

    async def run_until_stopped(self) -> None:
        """Start, serve until SIGINT/SIGTERM or ``request_shutdown``, then stop cleanly."""
        loop = asyncio.get_running_loop()
        installed: list[signal.Signals] = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._on_signal, sig)
                installed.append(sig)
        try:
            await self.start()
            await self._stop.wait()
            log.info("shutting down")
        finally:
            await self.aclose()
            for sig in installed:
                loop.remove_signal_handler(sig)
        log.info("stopped")

    def _on_signal(self, sig: signal.Signals) -> None:
        if self._stop.is_set() and sig == signal.SIGINT:
            log.warning("second interrupt: exiting immediately")
            raise SystemExit(130)
        log.info("received %s", sig.name)
        self._stop.set()


def _url_host(host: str) -> str:
    """``host`` as written in a URL (IPv6 literals in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
