"""An error no handler claims is a problem+json 500 that never breaks the client's next request."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from duragent.agents import AgentCatalog
from duragent.agents.reloading import Reloaded
from duragent.config import load_workspace
from duragent.config.workspace import WorkspaceConfig
from duragent.frontkit import WebhookReceiver
from duragent.gateways.http import HttpServer, build_app
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.turns import TurnRunner


class BrokenServices:
    """The HttpServices port, with a reload that fails in a way nobody expected."""

    version = "test"
    workspace_hash = "0" * 64

    def __init__(self, root: Path) -> None:
        self._config = load_workspace(root).config
        self.tasks = BackgroundTasks()

    @property
    def catalog(self) -> AgentCatalog:
        return AgentCatalog()

    @property
    def config(self) -> WorkspaceConfig:
        return self._config

    @property
    def turns(self) -> TurnRunner:
        raise NotImplementedError

    @property
    def schedule_desk(self) -> None:
        return None

    @property
    def forwarding(self) -> None:
        return None

    @property
    def relay(self) -> None:
        return None

    def starting(self) -> str | None:
        return None

    def gateway_states(self) -> dict[str, str]:
        return {}

    def services_down(self) -> dict[str, str]:
        return {}

    def skipped_records(self) -> dict[str, list[dict[str, str]]]:
        return {}

    def chat_delivery(self, gateway: str) -> None:
        return None

    def webhooks(self) -> dict[str, WebhookReceiver]:
        return {}

    def request_shutdown(self) -> bool:
        return True

    async def reload(self) -> Reloaded:
        raise RuntimeError("a bug")


@pytest.fixture
async def port(tmp_path: Path) -> AsyncIterator[int]:
    server = HttpServer(build_app(BrokenServices(tmp_path)), host="127.0.0.1", port=0)
    await server.start()
    try:
        yield server.port
    finally:
        await server.stop()


async def test_a_crash_answers_500_with_connection_close_and_no_reset(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    crash = b"POST /api/admin/v1/reload-agents HTTP/1.1\r\nHost: localhost\r\n\r\n"
    follow = b"GET /livez HTTP/1.1\r\nHost: localhost\r\n\r\n"
    writer.write(crash)
    head = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 120)).decode().lower()
    assert head.startswith("http/1.1 500 ")
    assert "content-type: application/problem+json" in head
    length = int(head.split("content-length: ", 1)[1].split("\r\n", 1)[0])
    body = json.loads(await reader.readexactly(length))
    assert body["status"] == 500
    if "connection: close" in head:
        assert await asyncio.wait_for(reader.read(), 120) == b""  # an orderly close
    else:  # kept open: the next request on it must be answered
        writer.write(follow)
        assert (await asyncio.wait_for(reader.readuntil(b"\r\n"), 120)).startswith(b"HTTP/1.1 200")
    writer.close()


async def test_a_client_reusing_its_connection_after_a_500_is_served(port: int) -> None:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        for _ in range(3):
            crashed = await client.post("/api/admin/v1/reload-agents")
            assert crashed.status_code == 500
            assert crashed.headers["content-type"] == "application/problem+json"
            assert (await client.get("/livez")).text == "ok"
