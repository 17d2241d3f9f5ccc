"""The composition root: builds every service from a workspace, starts and stops them in order.

The server is the list :attr:`Runtime.SERVICES`: each entry names a service, says whether it
is essential and builds it (or returns ``None`` when ``duragent.yaml`` or the command line
does not ask for it). A :class:`~duragent.lifecycle.services.ServiceStack` starts them in list
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
from dataclasses import replace
from typing import ClassVar

from duragent import __version__
from duragent.agents import AgentCatalog, load_catalog
from duragent.agents.reloading import Reloaded
from duragent.cluster import OwnerRelay
from duragent.config import LoadedWorkspace, WorkspaceConfig
from duragent.frontkit import (
    OutboundPort,
    WebhookReceiver,
)
from duragent.frontkit.delivery import Deliveries, Delivery
from duragent.gateways.http import HttpServer, build_app
from duragent.gateways.http.cluster.forwarding import SessionForwarding
from duragent.lifecycle.services import (
    Entry,
    Hooks,
    Service,
    ServiceStack,
    ServiceStopError,
    TaskService,
)
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.observability.metrics import Metrics
from duragent.runtime.endpoints import Endpoint, endpoint_changes, endpoint_of
from duragent.runtime.expiry import sweep_forever
from duragent.runtime.fronts import Fronts
from duragent.runtime.reloads import reloaded
from duragent.runtime.startup import descriptor_budget, report_agents
from duragent.scheduler import Clock, ScheduleDesk, Schedules, SystemClock
from duragent.session import RegistrySettings, SessionRegistry
from duragent.session.gate import tune_interpreter
from duragent.session.reader import RegistrySessionReader
from duragent.store import SessionStore, SharedStorage
from duragent.store.backends import session_storage
from duragent.store.serve_lock import ServeLock
from duragent.tools import sandbox as sandboxes
from duragent.tools.policy_files import local_policies_set_aside
from duragent.turns import TurnRunner
from duragent.turns.agent_budget import budget_check
from duragent.turns.providers import ProviderPool

__all__ = ["Runtime"]

log = logging.getLogger(__name__)


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
        clock: Clock | None = None,
    ) -> None:
        # ``clock``: what the scheduler and the TTL sweep read and wait on (default: the wall
        # clock); the simulated-year benchmark (bench/year.py) passes one it moves, with the
        # same time installed as the process's calendar (``duragent.core.clock``).
        self.workspace = workspace
        self._clock: Clock = clock or SystemClock()
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
        self._started_endpoints: dict[str, Endpoint] | None = None
        """Each agent's model endpoint when the server started (``runtime.endpoints``)."""
        self._http: HttpServer | None = None
        self._forwarding: SessionForwarding | None = None
        self._stop = asyncio.Event()
        self._ephemeral = ephemeral
        self._services = ServiceStack()
        self._tasks = BackgroundTasks()
        self._lock: ServeLock | None = None
        self._connection_cap: int | None = None
        self.metrics = Metrics() if config.server.metrics else None
        """This runtime's metrics, in a registry of its own (None: ``server.metrics`` off)."""
        store = session_storage(config.store, paths.sessions)
        if self.metrics is not None and isinstance(store, SessionStore):  # files: fsync'd
            store.on_append = self.metrics.event_log_fsync_seconds.observe
        self.registry = SessionRegistry(
            store,
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
        if self.metrics is not None:
            self.registry.instrument(self.metrics)
        self._sandbox = sandboxes.for_workspace(config.sandbox, paths)
        self._deliveries: Deliveries | None = None
        self._fronts = Fronts(
            config,
            paths.root,
            paths.schedules,
            paths.workspace / "processes",
            self.registry,
            self._tasks,
            catalog=lambda: self._catalog,
            clock=clock,
        )
        self.providers = ProviderPool(
            env=env,
            idle_timeout_seconds=config.server.idle_timeout_seconds,
            metrics=self.metrics,
        )
        self._turns = TurnRunner(
            self.registry,
            agents=lambda: self._catalog,
            providers=self.providers,
            workspace_dir=paths.workspace,
            world_memory_dir=paths.world_memory,
            policy_file=paths.policy,
            sessions=RegistrySessionReader(self.registry),
            extra_tools=self._fronts.extra_tools,
            env=env,
            sandbox=self._sandbox,
            metrics=self.metrics,
        )
        self.processes = self._fronts.serve_with(self._turns)
        if self.metrics is not None and self._fronts.owner_relay is not None:
            self._fronts.owner_relay.instrument(self.metrics)

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
        return self._fronts.schedules

    @property
    def schedule_desk(self) -> ScheduleDesk | None:
        """The scheduler's JSON operations, for HTTP."""
        schedules = self._fronts.schedules
        return ScheduleDesk(schedules) if schedules is not None else None

    @property
    def http_port(self) -> int | None:
        """The bound HTTP port once started (useful with port 0)."""
        return self._http.port if self._http else None

    @property
    def relay(self) -> OwnerRelay | None:
        """Chat messages handed between nodes (a shared store only)."""
        return self._fronts.owner_relay

    @property
    def forwarding(self) -> SessionForwarding | None:
        """Serving sessions other nodes own (a shared store only; started with HTTP)."""
        return self._forwarding

    def starting(self) -> str | None:
        """Why a first message would wait (``/readyz``): the providers' SDKs still loading."""
        if self.providers.warming:
            return "the model providers are still starting (their SDKs are being loaded)"
        return None

    async def reload(self) -> Reloaded:
        """``reload-agents``: the catalog swapped, the declared schedules taken (``reloads``).

        What it changed comes back: agents and declared schedules added, removed, changed.
        """
        before = self._catalog
        return await reloaded(before, self.reload_agents(), self._fronts.schedules)

    def reload_agents(self) -> AgentCatalog:
        """Re-read the agents directory and swap the catalog atomically.

        The catalog alone (what the start does, before the scheduler): ``reload`` is the
        reload an operator asks for, which the scheduler's declared schedules follow.
        """
        self._catalog = load_catalog(
            self._agents_dir,
            workspace_directives=self.workspace.paths.directives,
            env=self._env,
            check=budget_check(self.workspace.paths.workspace),
        )
        report_agents(self._catalog, self.workspace.paths.policy, self._env)
        agents = self._catalog.agents
        if self._started_endpoints is None:
            self._started_endpoints = {name: endpoint_of(a) for name, a in agents.items()}
        else:
            for name, agent in agents.items():  # an agent added later: its first endpoint
                self._started_endpoints.setdefault(name, endpoint_of(agent))
            changes = endpoint_changes(self._started_endpoints, agents)
            for change in changes:
                log.warning("%s", change)
            self._catalog = replace(self._catalog, endpoint_changes=changes)
        return self._catalog

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
        store = self.registry.store
        await sweep_forever(
            self.registry,
            self._ttl_hours,
            self._clock,
            lambda: sandboxes.prune_scratch(self._sandbox, store.list_ids),
        )

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
        :class:`~duragent.lifecycle.services.ServiceStartError` naming it.
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
        store = self.registry.store
        if isinstance(store, SharedStorage):  # before the app is built: it routes through it
            self._forwarding = SessionForwarding(store.nodes, store.lease_seconds)
            if self.metrics is not None:
                self._forwarding.instrument(self.metrics)
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
        if isinstance(store, SharedStorage):  # other nodes forward this node's sessions here
            url = self.config.store.advertise_url or f"http://{_url_host(self._host)}:{http.port}"
            if self.config.store.advertise_url is None and self._host in ("0.0.0.0", "::"):
                log.warning(
                    "other nodes are told to reach this one at %s, which does not reach it "
                    "from another machine: set store.advertise_url in %s",
                    url,
                    self.workspace.paths.config_file,
                )
            await asyncio.to_thread(store.nodes.register, url)

    async def _stop_http(self) -> None:
        http, self._http = self._http, None
        store = self.registry.store
        if isinstance(store, SharedStorage) and http is not None:
            with contextlib.suppress(OSError):  # it ages out by itself
                await asyncio.to_thread(store.nodes.leave)
        if http is not None:
            await http.stop()
        forwarding, self._forwarding = self._forwarding, None
        if forwarding is not None:
            await forwarding.aclose()

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
        # Before the chat gateways, stopped after them: they hand messages through it.
        Entry("chat-relay", lambda rt: rt._fronts.relay_service()),
        # Ready without them (``/readyz`` shows each chat gateway's state apart).
        Entry("telegram", lambda rt: rt._fronts.telegram(), essential=False, ready_without=True),
        Entry("discord", lambda rt: rt._fronts.discord(), essential=False, ready_without=True),
        Entry(
            "external-gateways",
            lambda rt: rt._fronts.external(),
            essential=False,
            ready_without=True,
        ),
        # After the chat gateways: a due run delivers through their outbound ports.
        Entry("scheduler", lambda rt: rt._fronts.scheduler(), essential=False),
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

    def outbound_port(self, gateway: str) -> OutboundPort | None:
        """What sends into chats of ``gateway`` (None: not configured or not started)."""
        return self._fronts.outbound_port(gateway)

    def chat_delivery(self, gateway: str) -> Delivery | None:
        """What delivers into chats of ``gateway`` for HTTP (an approval decided there)."""
        if self._deliveries is None:
            self._deliveries = Deliveries(
                self._turns, self._fronts.outbound_port, agents=lambda: self._catalog
            )
        return self._deliveries.get(gateway)

    def gateway_states(self) -> dict[str, str]:
        """Each chat gateway's state (``/readyz``)."""
        return self._fronts.gateway_states()

    def services_down(self) -> dict[str, str]:
        """Services that cannot do their work, with why (``/readyz`` is then 503)."""
        return self._services.not_ready() | self._fronts.down()

    def skipped_records(self) -> dict[str, list[dict[str, str]]]:
        """Records set aside rather than loaded, by kind (``/readyz``'s details)."""
        agent_dirs = (agent.directory for agent in self._catalog.agents.values())
        policies = local_policies_set_aside(agent_dirs)
        return self._fronts.skipped_records() | ({"policies": policies} if policies else {})

    def webhooks(self) -> dict[str, WebhookReceiver]:
        """The webhook paths chat gateways receive updates on (served by HTTP)."""
        return self._fronts.webhooks()

    def _ephemeral_service(self) -> Service | None:
        """``--ephemeral``: stop when idle (asked for on the command line, so essential)."""
        seconds = self._ephemeral
        if not seconds:
            return None
        return TaskService("ephemeral", lambda: self._exit_when_idle(seconds))

    def _budget_descriptors(self) -> None:
        """Raise the open-file limit; cap live actors at what fits beside the connections."""
        cap = descriptor_budget(self._config, self.registry)
        self._connection_cap = cap.connections
        self._config = cap.config

    async def aclose(self) -> None:
        """Stop every service, in reverse start order; one failing does not stop the rest.

        Raises :class:`~duragent.lifecycle.services.ServiceStopError` naming the services that
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
