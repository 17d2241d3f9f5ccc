"""A client that leaves mid-stream costs one log line, not a flood from the transport.

asyncio's transport logs ``socket.send() raised exception`` for every write after the fifth
to a connection it has lost. A writer that sends a burst of events without giving the event
loop a turn never lets uvicorn notice the loss, so one disconnect logged dozens of lines:
both the SSE stream (against ``duragent serve`` with the offline model, ~200 lines for five
disconnects) and the scripted model's own stream (85 lines for one) did. The clients are
plain sockets (as curl would be) that read the first bytes of the stream and close.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import signal
import socket
import struct
from pathlib import Path

import httpx
import pytest

from duragent.testing import Reply
from tests.cli.test_commands import run
from tests.cli.test_serve import free_port, start_serve, wait_ready
from tests.gateways.http.api_fixtures import served
from tests.polling import eventually


def read_a_little_and_leave(port: int, session_id: str, *, reset: bool = False) -> bytes:
    """POST …/stream over a raw socket, read the first SSE bytes, close (RST if ``reset``)."""
    body = json.dumps({"content": "talk"}).encode()
    head = (
        f"POST /api/v1/sessions/{session_id}/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(head + body)
        received = b""
        while b"event: token" not in received:
            chunk = sock.recv(4096)
            if not chunk:
                break
            received += chunk
        if reset:  # as a killed client: the kernel answers the next write with a reset
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    return received


@pytest.mark.parametrize("reset", [False, True], ids=["closed", "reset"])
async def test_a_client_leaving_mid_stream_is_logged_once_naming_the_session(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, reset: bool
) -> None:
    async with served(tmp_path, on_disconnect="pause") as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="go ", endless=True))
        port = s.runtime.http_port
        assert port is not None
        with caplog.at_level(logging.INFO):
            caplog.clear()
            received = await asyncio.to_thread(read_a_little_and_leave, port, sid, reset=reset)

            async def paused() -> bool:
                info = (await s.client.get(f"/api/v1/sessions/{sid}")).json()
                return bool(info["status"] == "paused")

            assert await eventually(paused)
            # the test's own requests are logged by httpx: not the server's lines
            lines = [r for r in caplog.records if not r.name.startswith("httpx")]
    assert b"event: token" in received
    assert len(lines) == 1, [f"{r.name}: {r.getMessage()}" for r in lines]
    assert lines[0].name.startswith("duragent")
    assert sid in lines[0].getMessage()
    assert "disconnected" in lines[0].getMessage()


def test_clients_leaving_a_served_workspace_cause_no_transport_warnings(tmp_path: Path) -> None:
    """``duragent serve`` as a user runs it (offline model, whose reply comes in one burst):
    before, five clients leaving logged ~200 transport warnings (collapsed by the log's
    repeat filter into "[N more like it …]"); a leaving client is noticed before the next
    write now, and no session is named twice."""
    assert run("init", str(tmp_path), "--no-interactive")[0] == 0
    port = free_port()
    proc = start_serve("-c", str(tmp_path), "--port", str(port))
    sessions = []
    try:
        wait_ready(port, proc)
        for _ in range(5):
            created = httpx.post(
                f"http://127.0.0.1:{port}/api/v1/sessions", json={"agent": "assistant"}, timeout=60
            )
            sessions.append(created.json()["session_id"])
            assert b"event: token" in read_a_little_and_leave(port, sessions[-1])
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    assert "socket.send() raised exception" not in out
    named = re.findall(r"stream (session_\w+): the client disconnected", out)
    assert len(named) == len(set(named))
    assert set(named) <= set(sessions)
