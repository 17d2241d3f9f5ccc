"""Slow and idle clients are cut off in time, over real sockets; streams are not.

Bounds (``wait_for`` 20 s) only stop a hung test: the timeouts under test are 0.5–1 s, and
before they existed every one of these waited forever.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx

from duragent.testing import Reply
from tests.gateways.http.api_fixtures import served

FAST = (
    "  header_timeout_seconds: 0.5\n"
    "  body_timeout_seconds: 0.5\n"
    "  connection_idle_timeout_seconds: 0.5\n"
)
LIMIT = 20


async def _connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


async def _trickle(writer: asyncio.StreamWriter, data: bytes) -> None:
    """Send ``data`` a byte every 0.2 s until the server closes the connection."""
    try:
        for byte in data:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(0.2)
    except ConnectionError:
        pass


async def _read_all(reader: asyncio.StreamReader) -> bytes:
    try:
        return await asyncio.wait_for(reader.read(), LIMIT)
    except ConnectionError:
        return b""


async def test_a_half_sent_request_head_gets_408_and_is_closed(tmp_path: Path) -> None:
    async with served(tmp_path, server_yaml=FAST) as s:
        reader, writer = await _connect(s.runtime.http_port or 0)
        writer.write(b"GET /api/v1/agents HTTP/1.1\r\nHost: localhost\r\n")
        trickle = asyncio.create_task(_trickle(writer, b"X-Slow: " + b"a" * 200))
        served_meanwhile = await s.client.get("/api/v1/agents")
        answer = await _read_all(reader)
        trickle.cancel()
        writer.close()
    assert served_meanwhile.status_code == 200
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert b"connection: close" in answer.lower()
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["status"] == 408


async def test_a_trickled_body_gets_408_and_frees_its_slot(tmp_path: Path) -> None:
    async with served(tmp_path, server_yaml=FAST + "  max_connections: 1\n") as s:
        reader, writer = await _connect(s.runtime.http_port or 0)
        body = b'{"agent": "bot"}'
        writer.write(
            b"POST /api/v1/sessions HTTP/1.1\r\nHost: localhost\r\n"
            b"Content-Type: application/json\r\n"
            b"Content-Length: " + str(len(body) + 100).encode() + b"\r\n\r\n"
        )
        trickle = asyncio.create_task(_trickle(writer, body + b" " * 100))
        await asyncio.sleep(0.1)  # the trickler is (most likely) in its slot now
        waiting = await asyncio.wait_for(s.client.get("/api/v1/agents"), LIMIT)
        answer = await _read_all(reader)
        trickle.cancel()
        writer.close()
    assert waiting.status_code == 200
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert b"server.body_timeout_seconds" in answer


async def test_a_connection_that_never_sends_is_closed(tmp_path: Path) -> None:
    async with served(tmp_path, server_yaml=FAST) as s:
        reader, writer = await _connect(s.runtime.http_port or 0)
        assert await _read_all(reader) == b""  # closed without a word
        writer.close()


async def test_an_idle_keep_alive_connection_is_closed(tmp_path: Path) -> None:
    async with served(tmp_path, server_yaml=FAST) as s:
        reader, writer = await _connect(s.runtime.http_port or 0)
        writer.write(b"GET /livez HTTP/1.1\r\nHost: localhost\r\n\r\n")
        answer = await _read_all(reader)  # returns once the idle connection is closed
        writer.close()
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert answer.endswith(b"ok")


async def test_a_stream_longer_than_every_timeout_is_not_cut(tmp_path: Path) -> None:
    async with served(tmp_path, server_yaml=FAST) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="one two three four five", chunk_delay=0.4))
        async with s.client.stream(
            "POST", f"/api/v1/sessions/{sid}/stream", json={"content": "hi"}
        ) as response:
            events = [
                line.split(":", 1)[1].strip()
                async for line in response.aiter_lines()
                if line.startswith("event:")
            ]
    assert events[0] == "start"
    assert events[-1] == "done"
    assert events.count("token") >= 3  # a few chunks, each 0.4 s apart: > every timeout


async def test_a_client_reusing_a_connection_within_the_idle_time_is_served(
    tmp_path: Path,
) -> None:
    async with (
        served(tmp_path, server_yaml=FAST) as s,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{s.runtime.http_port}") as client,
    ):
        for _ in range(5):
            assert (await client.get("/api/v1/agents")).status_code == 200


async def test_stopping_refuses_a_body_still_arriving_with_503(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        reader, writer = await _connect(s.runtime.http_port or 0)
        writer.write(
            b"POST /api/v1/sessions HTTP/1.1\r\nHost: localhost\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
        )
        await writer.drain()
        await asyncio.sleep(0.2)
        await s.runtime.aclose()  # stops the HTTP server while the body is incomplete
        answer = await _read_all(reader)
        writer.close()
    assert answer.startswith(b"HTTP/1.1 503 ")
    assert b"shutting down" in answer
