"""Running a fake server's aiohttp app in the test's loop, or on its own loop in a thread.

Async tests share their event loop with the fake; sync tests and crash campaigns need it on a
loop of its own (a daemon thread), or in another process (which runs it in the main loop).
This base class holds that lifecycle once, so the fake itself is only its API.
"""

from __future__ import annotations

import asyncio
import contextlib

from aiohttp import web

from duragent.testing._lifecycle import ServerLifecycle
from duragent.testing._sockets import listen

__all__ = ["EmbeddedAiohttpServer"]


class EmbeddedAiohttpServer(ServerLifecycle):
    """An aiohttp app on a loopback socket; subclasses supply ``app()`` and ``name``."""

    name = "fake server"
    shutdown_timeout = 1.0
    """Seconds ``stop`` lets handlers finish before cancelling them."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing: asyncio.Event | None = None
        self._stopped: asyncio.Event | None = None
        self._runner: web.AppRunner | None = None

    def app(self) -> web.Application:
        """The application to serve."""
        raise NotImplementedError

    def _on_stopping(self) -> None:
        """Wake handlers that wait (long polls, delays): ``_closing`` is set now."""

    @property
    def url(self) -> str:
        """``http://host:port``."""
        return f"http://{self.host}:{self.port}"

    async def _pause(self, seconds: float) -> None:
        """Sleep, but no longer than until the server stops."""
        if self._closing is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._closing.wait(), seconds)

    # -- in the current event loop ---------------------------------------------------------

    async def start(self) -> None:
        """Bind the socket and serve from the running loop; returns once accepting."""
        if self._runner is not None:
            raise RuntimeError(f"the {self.name} is already running")
        sock = listen(self.host, self.port)
        self.port = sock.getsockname()[1]
        self._loop = asyncio.get_running_loop()
        self._closing, self._stopped = asyncio.Event(), asyncio.Event()
        runner = web.AppRunner(self.app(), access_log=None, shutdown_timeout=self.shutdown_timeout)
        await runner.setup()
        try:
            await web.SockSite(runner, sock).start()
        except BaseException:
            sock.close()
            await runner.cleanup()
            raise
        self._runner = runner

    def request_stop(self) -> None:
        """Ask ``serve_until_stopped`` to end (call on the server's loop)."""
        if self._stopped is not None:
            self._stopped.set()

    async def stop(self) -> None:
        """End waiting handlers, close every connection and the socket."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        assert self._closing is not None
        self._closing.set()
        self._on_stopping()
        await runner.cleanup()
        self.request_stop()

    async def serve_until_stopped(self) -> None:
        """Serve until ``request_stop``/``stop_thread``, starting first if needed."""
        if self._runner is None:
            await self.start()
        assert self._stopped is not None
        await self._stopped.wait()
        await self.stop()
