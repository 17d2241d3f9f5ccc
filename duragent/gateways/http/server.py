"""Run the app under uvicorn inside our event loop, with our own lifecycle and signals.

uvicorn's ``serve()`` installs SIGINT/SIGTERM handlers and re-raises the signal after it
stops, which would kill the process before sessions are flushed. The runtime owns signals;
this server only starts, reports its bound port, and stops when asked.

The app built by ``build_app`` carries its ``server:`` settings and its :class:`ServerHealth`
in ``app.state``; the server reads them for the connection timeouts (``protocol.py``) and
gives the health to the listening socket (``listener.py``), so ``/readyz`` knows when accepting
fails. While serving, repeated log records of asyncio's accept loop, uvicorn and this package
are collapsed (``core.logrepeat``) so a flood of identical errors stays a few lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Generator

import uvicorn
from starlette.types import ASGIApp

from duragent.config.workspace import ServerConfig
from duragent.core.logrepeat import RepeatFilter
from duragent.gateways.http.health import ServerHealth
from duragent.gateways.http.listener import GuardedListener
from duragent.gateways.http.protocol import timed_protocol

__all__ = ["HttpServer"]

log = logging.getLogger(__name__)

FLOOD_PRONE_LOGGERS = (
    "asyncio",
    "uvicorn.error",
    "duragent.gateways.http.crash",
    "duragent.gateways.http.protocol",
)
"""Loggers that can repeat one record many times a second under attack or exhaustion."""


class _EmbeddedServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield  # the runtime handles signals


class HttpServer:
    """A uvicorn server bound to ``host:port`` (port 0 picks a free one)."""

    def __init__(self, app: ASGIApp, *, host: str, port: int) -> None:
        state = getattr(app, "state", None)
        settings: ServerConfig = getattr(state, "server_config", None) or ServerConfig()
        self.health: ServerHealth | None = getattr(state, "health", None)
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            lifespan="off",
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=10,
            http=timed_protocol(
                header=settings.header_timeout_seconds,
                body=settings.body_timeout_seconds,
                idle=settings.connection_idle_timeout_seconds,
            ),
        )
        self._repeats = RepeatFilter()
        self._server = _EmbeddedServer(config)
        self._task: asyncio.Task[None] | None = None
        self.host = host
        self.port = port

    async def start(self) -> None:
        """Bind and start serving; returns once the socket accepts connections.

        The socket is bound here (not by uvicorn, which calls ``sys.exit`` when a port is
        taken) so a busy port is an ``OSError`` with a clear message.
        """
        try:
            sock = _listen(self.host, self.port)
        except OSError as exc:
            raise OSError(
                f"cannot listen on {self.host}:{self.port}: {exc.strerror or exc}; "
                "choose another port with --port"
            ) from None
        sock.set_inheritable(True)
        sock.health = self.health
        self.port = sock.getsockname()[1]
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]), name="http-server")
        while not self._server.started:
            if self._task.done():
                failure = self._task.exception()
                raise OSError(f"HTTP server failed to start: {failure}")
            await asyncio.sleep(0.005)
        for name in FLOOD_PRONE_LOGGERS:
            logging.getLogger(name).addFilter(self._repeats)
        log.info("HTTP listening on http://%s:%d", self.host, self.port)

    async def stop(self) -> None:
        """Stop accepting, finish in-flight requests (10 s grace), close."""
        if self._task is None:
            return
        self._server.should_exit = True
        try:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        finally:
            self._task = None
            for name in FLOOD_PRONE_LOGGERS:
                logging.getLogger(name).removeFilter(self._repeats)


def _listen(host: str, port: int) -> GuardedListener:
    """A listening TCP socket created with ``IPPROTO_TCP``.

    asyncio disables Nagle's algorithm only on sockets whose ``proto`` is IPPROTO_TCP; a socket
    from ``socket.create_server`` has proto 0, and every small SSE write would then wait ~40 ms.
    """
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP, flags=socket.AI_PASSIVE
    )[0]
    sock = GuardedListener(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(address)
        sock.listen(2048)
    except BaseException:
        sock.close()
        raise
    return sock
