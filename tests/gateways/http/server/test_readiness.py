"""/readyz is 503 with a reason while every request slot is held; /livez stays cheap and 200."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from duragent.agents import load_catalog
from duragent.cli.launcher import ensure_server
from duragent.config import load_workspace
from duragent.gateways.http.server.health import ServerHealth
from duragent.testing import Reply
from tests.gateways.http.api_fixtures import Served, served
from tests.turns.turn_fixtures import agent_yaml


async def until_ready(s: Served) -> None:
    """Until /readyz says ready (the runtime warms its providers as it starts)."""
    for _ in range(2_400):
        if (await s.client.get("/readyz")).status_code == 200:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("never ready")


async def test_readyz_says_unavailable_while_every_slot_is_held(tmp_path: Path) -> None:
    async with served(tmp_path, server_yaml="  max_connections: 1\n") as s:
        await until_ready(s)
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="late", delay=60))  # the stream holds its slot meanwhile

        async def stream() -> None:
            url = f"/api/v1/sessions/{sid}/stream"
            async with s.client.stream("POST", url, json={"content": "hi"}) as response:
                async for _ in response.aiter_lines():
                    pass

        holder = asyncio.create_task(stream())
        for _ in range(2_400):
            busy = await s.client.get("/readyz")
            if busy.status_code == 503:
                break
            await asyncio.sleep(0.05)
        assert busy.status_code == 503
        assert busy.headers["content-type"] == "application/problem+json"
        assert busy.json()["detail"] == "all 1 request slots are in use (server.max_connections)"
        assert busy.json()["workspace_hash"] == s.runtime.workspace_hash
        assert (await s.client.get("/livez")).status_code == 200
        # `duragent chat` still recognises its busy server instead of starting another
        ws = load_workspace(tmp_path)
        url = await asyncio.to_thread(ensure_server, ws, s.runtime.http_port)
        assert url == f"http://127.0.0.1:{s.runtime.http_port}"
        holder.cancel()  # the client leaves: its slot is freed
        with contextlib.suppress(asyncio.CancelledError):
            await holder
        for _ in range(2_400):
            ready = await s.client.get("/readyz")
            if ready.status_code == 200:
                break
            await asyncio.sleep(0.05)
        assert ready.json()["status"] == "ok"


async def test_a_slow_upload_waits_outside_the_slots(tmp_path: Path) -> None:
    slow = "  max_connections: 1\n  body_timeout_seconds: 600\n"
    async with served(tmp_path, server_yaml=slow) as s:
        _, writer = await asyncio.open_connection("127.0.0.1", s.runtime.http_port)
        writer.write(
            b"POST /api/v1/sessions HTTP/1.1\r\nHost: localhost\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
        )
        await writer.drain()
        await asyncio.sleep(0.2)  # (most likely) inside the server by now
        served_meanwhile = await asyncio.wait_for(s.client.get("/api/v1/agents"), 60)
        ready = await s.client.get("/readyz")
        writer.close()
    assert served_meanwhile.status_code == 200
    assert ready.status_code == 200


def test_a_failed_accept_makes_the_server_not_ready_for_a_while() -> None:
    now = [100.0]
    health = ServerHealth(4)
    health.clock = lambda: now[0]
    assert health.not_ready_reason() is None
    health.accept_failed(OSError(24, "Too many open files"))
    assert health.not_ready_reason() == "cannot accept new connections: Too many open files"
    now[0] += 10
    assert health.not_ready_reason() is None


async def test_readyz_waits_for_the_model_providers_to_start(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        await until_ready(s)
        assert not s.runtime.providers.warming
        other = tmp_path / "other"  # another model setting: a provider not built yet
        (other / "bot").mkdir(parents=True)
        (other / "bot" / "agent.yaml").write_text(agent_yaml("http://127.0.0.1:9/v1"))
        warm = asyncio.create_task(s.runtime.providers.warm([load_catalog(other).get("bot")]))
        await asyncio.sleep(0)
        warming: bool = s.runtime.providers.warming  # (read now: the build is under way)
        assert warming
        assert s.runtime.starting() == (
            "the model providers are still starting (their SDKs are being loaded)"
        )
        await warm
        assert s.runtime.starting() is None
        assert (await s.client.get("/readyz")).status_code == 200


async def test_readyz_reports_what_start_up_still_waits_for(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        s.runtime.starting = lambda: "still loading"  # type: ignore[method-assign]
        answer = await s.client.get("/readyz")
        assert answer.status_code == 503
        assert answer.json()["detail"] == "still loading"
