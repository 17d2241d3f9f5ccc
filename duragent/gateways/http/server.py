"""Run the app under uvicorn inside our event loop, with our own lifecycle and signals.

uvicorn's ``serve()`` installs SIGINT/SIGTERM handlers and re-raises the signal after it
stops, which would kill the process before sessions are flushed. The runtime owns signals;
this server only starts, reports its bound port, and stops when asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Generator

import uvicorn
from starlette.types import ASGIApp

__all__ = ["HttpServer"]

log = logging.getLogger(__name__)


class _EmbeddedServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield  # the runtime handles signals


class HttpServer:
    """A uvicorn server bound to ``host:port`` (port 0 picks a free one)."""

    def __init__(self, app: ASGIApp, *, host: str, port: int) -> None:
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            lifespan="off",
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=10,
        )
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
        self.port = sock.getsockname()[1]
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]), name="http-server")
        while not self._server.started:
            if self._task.done():
                failure = self._task.exception()
                raise OSError(f"HTTP server failed to start: {failure}")
            await asyncio.sleep(0.005)
        log.info("HTTP listening on http://%s:%d", self.host, self.port)

    async def stop(self) -> None:
        """Stop accepting, finish in-flight requests (10 s grace), close."""
        if self._task is None:
            return
        self._server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
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
