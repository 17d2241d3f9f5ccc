"""server.max_connections: requests over the limit wait for a slot; health checks never wait."""

from __future__ import annotations

import asyncio

import httpx
from starlette.types import Receive, Scope, Send

from duragent.gateways.http.server.limits import ConcurrencyLimit


class SlowApp:
    """An ASGI app that answers after ``release`` is set, counting requests inside it."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.inside = 0
        self.peak = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.inside += 1
        self.peak = max(self.peak, self.inside)
        try:
            if scope["path"] not in ("/livez", "/readyz"):
                await self.release.wait()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})
        finally:
            self.inside -= 1


async def test_requests_over_the_limit_wait_and_then_all_succeed() -> None:
    app = SlowApp()
    transport = httpx.ASGITransport(app=ConcurrencyLimit(app, limit=2))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        calls = [asyncio.create_task(client.get("/api/v1/agents")) for _ in range(5)]
        await asyncio.sleep(0.1)
        assert app.inside == 2  # three are waiting for a slot, none refused
        app.release.set()
        responses = await asyncio.gather(*calls)
    assert [r.status_code for r in responses] == [200] * 5
    assert app.peak == 2


async def test_health_checks_are_answered_while_every_slot_is_taken() -> None:
    app = SlowApp()
    transport = httpx.ASGITransport(app=ConcurrencyLimit(app, limit=1))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        busy = asyncio.create_task(client.get("/api/v1/sessions"))
        await asyncio.sleep(0.05)
        live = await asyncio.wait_for(client.get("/livez"), 120)
        app.release.set()
        await busy
    assert live.status_code == 200
