"""One lifecycle for the fake servers: in the test's event loop, or on a loop of its own.

Async tests share their event loop with a fake (``async with``); sync tests and crash
campaigns need it on a loop of its own in a daemon thread (``with``, ``start_in_thread``). A
fake supplies ``start``, ``stop``, ``serve_until_stopped`` and ``request_stop`` for its own
server (uvicorn for the model, aiohttp for Telegram); the rest is here, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from types import TracebackType
from typing import Self

__all__ = ["ServerLifecycle"]


class ServerLifecycle:
    """``async with`` / ``with`` / ``start_in_thread`` over a fake's own start and stop."""

    name = "fake server"
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None

    async def start(self) -> None:
        """Bind and serve from the running loop; returns once accepting."""
        raise NotImplementedError

    async def stop(self) -> None:
        """Stop serving and close every connection and the socket."""
        raise NotImplementedError

    async def serve_until_stopped(self) -> None:
        """Serve until ``request_stop``, starting first if needed."""
        raise NotImplementedError

    def request_stop(self) -> None:
        """Ask ``serve_until_stopped`` to end (call on the server's loop)."""
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def start_in_thread(self, timeout: float = 10.0) -> Self:
        """Serve on a new event loop in a daemon thread; returns once accepting."""
        if self._thread is not None:
            raise RuntimeError(f"the {self.name} thread is already running")
        ready = threading.Event()
        failure: list[BaseException] = []

        async def run() -> None:
            try:
                await self.start()
            except BaseException as exc:
                failure.append(exc)
                raise
            finally:
                ready.set()
            await self.serve_until_stopped()

        def target() -> None:
            with contextlib.suppress(BaseException):
                asyncio.run(run())

        self._thread = threading.Thread(target=target, name=self.name, daemon=True)
        self._thread.start()
        if not ready.wait(timeout) or failure:
            self._thread = None
            raise RuntimeError(f"the {self.name} did not start: {failure[:1]}")
        return self

    def stop_thread(self, timeout: float = 10.0) -> None:
        """Stop a server started with ``start_in_thread`` and wait for its thread."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop already ended
            loop.call_soon_threadsafe(self.request_stop)
        thread.join(timeout)
        self._thread = None

    def __enter__(self) -> Self:
        return self.start_in_thread()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop_thread()
