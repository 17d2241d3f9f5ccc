"""Run the app under uvicorn inside our event loop, with our own lifecycle and signals.

uvicorn's ``serve()`` installs SIGINT/SIGTERM handlers and re-raises the signal after it
stops, which would kill the process before sessions are flushed. The runtime owns signals;
this server only starts, reports its bound port, and stops when asked.

The app built by ``build_app`` carries its ``server:`` settings and its :class:`ServerHealth`
in ``app.state``; the server reads them for the connection timeouts (``protocol.py``) and
gives the health to its accept loop (``listener.py``), so ``/readyz`` knows when connections
wait. The accept loop replaces asyncio's (uvicorn's ``startup`` is overridden; the rest of
uvicorn's lifecycle is kept): it keeps at most ``max_open_connections`` connections open, the
share of the open-file limit the runtime's budget gives HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Generator
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from duragent.config.workspace import ServerConfig
from duragent.gateways.http.api.stream import OpenStreams
from duragent.gateways.http.server.health import ServerHealth
from duragent.gateways.http.server.listener import Acceptor
from duragent.gateways.http.server.protocol import TimedH11Protocol, timed_protocol

__all__ = ["HttpServer"]

log = logging.getLogger(__name__)


class _EmbeddedServer(uvicorn.Server):
    """uvicorn's server with our signals (none) and our accept loop."""

    def __init__(
        self, config: uvicorn.Config, *, cap: int | None, health: ServerHealth | None
    ) -> None:
        super().__init__(config)
        self._cap = cap
        self._health = health
        self.acceptor: Acceptor | None = None

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield  # the runtime handles signals

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Serve ``sockets[0]`` through an :class:`Acceptor` instead of ``create_server``."""
        assert sockets, "HttpServer always passes its bound socket"
        await self.lifespan.startup()
        config = self.config
        state = self.server_state

        def create_protocol() -> asyncio.Protocol:
            made: Any = config.http_protocol_class
            protocol = made(config=config, server_state=state, app_state=self.lifespan.state)
            if isinstance(protocol, TimedH11Protocol):
                protocol.hooks = acceptor
            return protocol  # type: ignore[no-any-return]

        acceptor = Acceptor(sockets[0], create_protocol, cap=self._cap, health=self._health)
        self.servers = []  # uvicorn's shutdown closes these: there are none
        acceptor.start()
        self.acceptor = acceptor
        self.started = True

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Stop accepting first, then uvicorn's shutdown (closes the socket and connections)."""
        if self.acceptor is not None:
            await self.acceptor.stop()
        await super().shutdown(sockets)


class HttpServer:
    """A uvicorn server bound to ``host:port`` (port 0 picks a free one)."""

    def __init__(
        self, app: ASGIApp, *, host: str, port: int, max_open_connections: int | None = None
    ) -> None:
        """``max_open_connections``: connections kept open at once (None: no cap)."""
        state = getattr(app, "state", None)
        settings: ServerConfig = getattr(state, "server_config", None) or ServerConfig()
        self.health: ServerHealth | None = getattr(state, "health", None)
        self._streams: OpenStreams | None = getattr(state, "open_streams", None)
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
        self._server = _EmbeddedServer(config, cap=max_open_connections, health=self.health)
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
        self.port = sock.getsockname()[1]
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]), name="http-server")
        while not self._server.started:
            if self._task.done():
                failure = self._task.exception()
                raise OSError(f"HTTP server failed to start: {failure}")
            await asyncio.sleep(0.005)
        cap = self._server.acceptor.cap if self._server.acceptor else None
        log.info(
            "HTTP listening on http://%s:%d%s",
            self.host,
            self.port,
            f" (at most {cap} connections open; more wait to be accepted)" if cap else "",
        )

    async def stop(self) -> None:
        """Stop accepting, finish in-flight requests (10 s grace), close."""
        if self._task is None:
            return
        if self._streams is not None:  # a turn still streaming ends with ``cancelled``
            self._streams.server_stopping()
        self._server.should_exit = True
        try:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        finally:
            self._task = None


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket created with ``IPPROTO_TCP``.

    asyncio disables Nagle's algorithm only on sockets whose ``proto`` is IPPROTO_TCP; a socket
    from ``socket.create_server`` has proto 0, and every small SSE write would then wait ~40 ms.
    """
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
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
