"""The accept loop keeps at most ``max_open_connections`` open; the others wait in the queue.

A real uvicorn server (``HttpServer``) on 127.0.0.1 with a tiny cap and a small app whose
``/slow`` route holds its request until the test releases it. Bounds (``wait_for`` 20 s) only
stop a hung test; nothing here asserts a duration.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from duragent.config.workspace import ServerConfig
from duragent.gateways.http.server.health import ServerHealth
from duragent.gateways.http.server.listener import Acceptor
from duragent.gateways.http.server.uvicorn_server import HttpServer

LIMIT = 20
REQUEST = b"GET /%s HTTP/1.1\r\nHost: localhost\r\n\r\n"


class App:
    """``/fast`` answers at once; ``/slow`` waits for ``release``."""

    def __init__(self, cap: int) -> None:
        self.release = asyncio.Event()
        self.inside = 0

        async def fast(_: Request) -> PlainTextResponse:
            return PlainTextResponse("fast")

        async def slow(_: Request) -> PlainTextResponse:
            self.inside += 1
            await self.release.wait()
            return PlainTextResponse("slow")

        self.app = Starlette(routes=[Route("/fast", fast), Route("/slow", slow)])
        self.app.state.server_config = ServerConfig(connection_idle_timeout_seconds=60)
        self.health = ServerHealth(100)
        self.app.state.health = self.health
        self.cap = cap


@asynccontextmanager
async def serving(cap: int) -> AsyncIterator[tuple[App, HttpServer]]:
    app = App(cap)
    server = HttpServer(app.app, host="127.0.0.1", port=0, max_open_connections=cap)
    await server.start()
    try:
        yield app, server
    finally:
        app.release.set()
        await server.stop()


class Conn:
    """One raw keep-alive connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Conn:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def send(self, path: str) -> None:
        self.writer.write(REQUEST % path.encode())
        await self.writer.drain()

    async def answer(self) -> bytes:
        """One response (status line to end of body), or b"" if the server closed."""
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), LIMIT)
        length = next(
            int(line.split(b":")[1])
            for line in head.lower().split(b"\r\n")
            if line.startswith(b"content-length:")
        )
        return head + await self.reader.readexactly(length)

    async def closed_by_server(self) -> bool:
        try:
            return await asyncio.wait_for(self.reader.read(1), LIMIT) == b""
        except ConnectionError:
            return True

    def close(self) -> None:
        self.writer.close()


async def _until(predicate: Any) -> None:
    for _ in range(12_000):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


async def test_connections_beyond_the_cap_wait_in_the_queue_and_are_served_in_turn() -> None:
    async with serving(cap=2) as (app, server):
        holders = [await Conn.open(server.port) for _ in range(2)]
        for conn in holders:
            await conn.send("slow")
        await _until(lambda: app.inside == 2)
        waiting = await Conn.open(server.port)  # the kernel completes the handshake
        await waiting.send("fast")
        answer = asyncio.create_task(waiting.answer())
        await asyncio.sleep(0.3)
        acceptor = server._server.acceptor
        assert acceptor is not None
        assert acceptor.open == 2  # not accepted: both holders are in a request
        assert not answer.done()
        assert app.health.not_ready_reason() == (
            "all 2 connections the open-file limit allows are open; "
            "new connections wait to be accepted"
        )
        app.release.set()
        for conn in holders:
            assert (await conn.answer()).startswith(b"HTTP/1.1 200")
        assert (await answer).startswith(b"HTTP/1.1 200")
        for conn in (*holders, waiting):
            conn.close()


async def test_at_the_cap_the_longest_quiet_connection_is_closed_for_one_that_waits() -> None:
    async with serving(cap=2) as (_, server):
        oldest, newer = await Conn.open(server.port), await Conn.open(server.port)
        for conn in (oldest, newer):  # both keep-alive, quiet after one request
            await conn.send("fast")
            assert (await conn.answer()).startswith(b"HTTP/1.1 200")
        waiting = await Conn.open(server.port)
        await waiting.send("fast")
        # Without making room it would wait for the 60 s idle timeout.
        assert (await waiting.answer()).startswith(b"HTTP/1.1 200")
        assert await oldest.closed_by_server()
        await newer.send("fast")  # the other one was left alone
        assert (await newer.answer()).startswith(b"HTTP/1.1 200")
        for conn in (oldest, newer, waiting):
            conn.close()


async def test_a_connection_in_a_request_is_never_closed_to_make_room() -> None:
    async with serving(cap=1) as (app, server):
        holder = await Conn.open(server.port)
        await holder.send("slow")
        await _until(lambda: app.inside == 1)
        waiting = await Conn.open(server.port)
        await waiting.send("fast")
        await asyncio.sleep(1.5)  # longer than QUIET_BEFORE_CLOSE: the holder is not quiet
        app.release.set()
        assert (await holder.answer()).startswith(b"HTTP/1.1 200 ")
        assert (await waiting.answer()).startswith(b"HTTP/1.1 200 ")
        holder.close()
        waiting.close()


class RefusingListener(socket.socket):
    """A listening socket whose first ``failures`` accepts fail with EMFILE (the OS boundary)."""

    failures = 3
    attempts = 0

    def accept(self) -> tuple[socket.socket, Any]:
        self.attempts += 1
        if self.failures:
            self.failures -= 1
            raise OSError(errno.EMFILE, "Too many open files")
        return super().accept()


async def test_out_of_descriptors_the_loop_backs_off_says_why_and_then_accepts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    listener = RefusingListener(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    health = ServerHealth(4)
    made: list[asyncio.Transport] = []

    class Greeter(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.Transport)
            transport.write(b"hello")
            made.append(transport)

    acceptor = Acceptor(listener, Greeter, cap=None, health=health)
    acceptor.start()
    writer: asyncio.StreamWriter | None = None
    try:
        with caplog.at_level(logging.WARNING, "duragent.gateways.http.server.listener"):
            reader, writer = await asyncio.open_connection(*listener.getsockname())
            assert await asyncio.wait_for(reader.readexactly(5), LIMIT) == b"hello"
        assert health.not_ready_reason() == "cannot accept new connections: Too many open files"
        # One attempt per failure and one that worked: a back-off, not a busy loop.
        assert listener.attempts <= 5
        warnings = [r for r in caplog.records if "cannot accept connections" in r.getMessage()]
        assert len(warnings) == 3
    finally:
        if writer is not None:
            writer.close()
        await acceptor.stop()
        for transport in made:
            transport.close()
        listener.close()
