"""The composition root: builds every service from a workspace, starts and stops them in order.

Start order: agents → (sessions, scheduler, gateways as they land) → HTTP. Stop order is the
reverse, so nothing accepts work that a stopped service would have to do. Signals (SIGINT,
SIGTERM) request a graceful stop; a second SIGINT during shutdown exits at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Mapping

from duragent import __version__
from duragent.agents import AgentCatalog, load_catalog
from duragent.config import LoadedWorkspace
from duragent.gateways.http import HttpServer, build_app

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
    ) -> None:
        self.workspace = workspace
        self.version = __version__
        self.workspace_hash = workspace.paths.workspace_hash
        self._host = host or workspace.config.server.host
        self._port = workspace.config.server.port if port is None else port
        self._agents_dir = (
            workspace.paths.agents if agents_dir is None else workspace.paths.root / agents_dir
        )
        self._env = env
        self._catalog = AgentCatalog()
        self._http: HttpServer | None = None
        self._stop = asyncio.Event()

    @property
    def catalog(self) -> AgentCatalog:
        """The agents currently served."""
        return self._catalog

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

    async def start(self) -> None:
        """Load agents and start every front end."""
        for warning in self.workspace.warnings:
            log.warning("%s", warning)
        self.reload_agents()
        self._http = HttpServer(build_app(self), host=self._host, port=self._port)
        await self._http.start()
        names = ", ".join(self._catalog.names()) or "(none)"
        log.info(
            "duragent %s serving %s: agents %s; http://%s:%d",
            self.version,
            self.workspace.paths.root,
            names,
            self._host,
            self._http.port,
        )

    def request_shutdown(self) -> None:
        """Ask ``run_until_stopped`` to stop gracefully (safe from signal handlers)."""
        self._stop.set()

    async def aclose(self) -> None:
        """Stop every service, in reverse start order."""
        if self._http is not None:
            await self._http.stop()
            self._http = None

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
