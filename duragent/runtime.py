"""The composition root: builds every service from a workspace, starts and stops them in order.

Start order: agents → session store and registry → turn runner → HTTP (and later the other
front ends and the scheduler). Stop order is the reverse, so nothing accepts work that a
stopped service would have to do: front ends stop first, then every session actor flushes and
snapshots, then provider connections close. SIGINT and SIGTERM request a graceful stop; a
second SIGINT during shutdown exits at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable, Mapping

from duragent import __version__
from duragent.agents import AgentCatalog, load_catalog
from duragent.config import LoadedWorkspace, WorkspaceConfig
from duragent.gateways.http import HttpServer, build_app
from duragent.session import RegistrySettings, SessionRegistry
from duragent.session.descriptors import budget, connection_cap
from duragent.session.gate import MAX_ACTIVE_ASKS, tune_interpreter
from duragent.session.reader import RegistrySessionReader
from duragent.store import SessionStore
from duragent.store.serve_lock import ServeLock
from duragent.turns import TurnRunner
from duragent.turns.agent_budget import budget_check
from duragent.turns.providers import ProviderPool

__all__ = ["Runtime"]

log = logging.getLogger(__name__)

TTL_SWEEP_SECONDS = 3600.0


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
        self._stop = asyncio.Event()
        self._ttl_task: asyncio.Task[None] | None = None
        self._warm_task: asyncio.Task[None] | None = None
        self._ephemeral = ephemeral
        self._ephemeral_task: asyncio.Task[None] | None = None
        self._lock: ServeLock | None = None
        self._connection_cap: int | None = None
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
            env=env,
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
    def http_port(self) -> int | None:
        """The bound HTTP port once started (useful with port 0)."""
        return self._http.port if self._http else None

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
        for agent in self._catalog.agents.values():
            if agent.model.provider == "offline":
                log.warning(
                    "agent '%s' uses the offline model: replies are fixed text, not AI "
                    "(set spec.model in %s to use a real model)",
                    agent.name,
                    agent.directory / "agent.yaml",
                )
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
        while True:
            await asyncio.sleep(TTL_SWEEP_SECONDS)
            try:
                await self.registry.expire(self._ttl_hours)
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
        """Lock the workspace, load agents, open the session store, start every front end.

        The lock comes first: a second server fails before it reads or writes anything.
        """
        paths = self.workspace.paths
        self._lock = ServeLock.acquire(paths.workspace, paths.sessions)
        self._budget_descriptors()
        self._untune = tune_interpreter(pin_threads=self.config.server.pin_python_threads)
        for warning in self.workspace.warnings:
            log.warning("%s", warning)
        self.reload_agents()
        await self.registry.open()
        self._ttl_task = asyncio.create_task(self._sweep_ttl(), name="ttl-sweeper")
        self._warm_task = asyncio.create_task(
            self.providers.warm(self._catalog.agents.values()), name="warm-providers"
        )
        if self._ephemeral:
            self._ephemeral_task = asyncio.create_task(
                self._exit_when_idle(self._ephemeral), name="ephemeral"
            )
        self._http = HttpServer(
            build_app(self),
            host=self._host,
            port=self._port,
            max_open_connections=self._connection_cap,
        )
        await self._http.start()
        self._lock.publish(f"http://{_url_host(self._host)}:{self._http.port}")
        names = ", ".join(self._catalog.names()) or "(none)"
        log.info(
            "duragent %s serving %s: agents %s; http://%s:%d",
            self.version,
            self.workspace.paths.root,
            names,
            self._host,
            self._http.port,
        )

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
        """Stop every service, in reverse start order."""
        if self._http is not None:
            await self._http.stop()
            self._http = None
        for task in (self._ttl_task, self._ephemeral_task, self._warm_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._ttl_task = self._ephemeral_task = self._warm_task = None
        await self.registry.aclose()
        await self.providers.aclose()
        if self._untune is not None:
            self._untune()
            self._untune = None
        if self._lock is not None:  # last: every actor has flushed and stopped writing
            self._lock.release()
            self._lock = None

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
