"""With the database away, no HTTP request stalls the event loop that serves every session.

Each route is called once while the PostgreSQL store is cut off (``postgres_db.Outage``),
and a watcher task in the server's own event loop measures how late its 10 ms sleeps wake up.
A database call made on the event loop waits out the pool's timeout (~1 s) and every other
session of the node waits with it; made from a thread, it stalls only its own request.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from tests.gateways.http.test_database_outage import served_through

postgres_db = pytest.importorskip("tests.store.postgres_db")

STALL_LIMIT = 0.25
"""Seconds: well under the pool's 1 s timeout, well over a scheduling hiccup."""


def schedule_body(every_seconds: int) -> dict[str, object]:
    return {
        "agent": "bot",
        "schedule": {"every": {"every_seconds": every_seconds}},
        "payload": {"message": {"message": "hi"}},
    }


@asynccontextmanager
async def loop_watcher() -> AsyncIterator[list[float]]:
    """The stalls of this event loop (seconds late per 10 ms sleep), while inside."""
    stalls: list[float] = []
    loop = asyncio.get_running_loop()

    async def watch() -> None:
        while True:
            before = loop.time()
            await asyncio.sleep(0.01)
            stalls.append(loop.time() - before - 0.01)

    task = asyncio.create_task(watch())
    try:
        yield stalls
    finally:
        task.cancel()


SHORT = ("POST /api/v1/schedules", "GET schedule", "DELETE schedule")
"""The routes of the default suite's version: the ones that stalled before (schedules)."""


@pytest.mark.slow  # ~19 s: each route waits the pool's timeout once, in a thread
async def test_no_route_stalls_the_event_loop_while_the_database_is_away(tmp_path: Path) -> None:
    await assert_no_stalls(tmp_path, only=None)


async def test_schedule_routes_do_not_stall_the_event_loop_while_the_database_is_away(
    tmp_path: Path,
) -> None:
    await assert_no_stalls(tmp_path, only=SHORT)


async def assert_no_stalls(tmp_path: Path, only: tuple[str, ...] | None) -> None:
    """Call each route (``only`` those) with the database cut; none may stall the loop."""
    outage = postgres_db.Outage()
    try:
        async with served_through(outage, tmp_path) as s:
            c = s.client
            sid = (await c.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
            made = await c.post(
                "/api/v1/schedules",
                json=schedule_body(86400),
            )
            assert made.status_code == 201, made.text
            sched = made.json()["id"]
            outage.down()
            session = f"/api/v1/sessions/{sid}"
            calls: dict[str, Callable[[], Awaitable[httpx.Response]]] = {
                "GET /readyz": lambda: c.get("/readyz"),
                "GET /api/v1/sessions": lambda: c.get("/api/v1/sessions"),
                "POST /api/v1/sessions": lambda: c.post("/api/v1/sessions", json={"agent": "bot"}),
                "GET session": lambda: c.get(session),
                "GET messages": lambda: c.get(f"{session}/messages"),
                "POST messages": lambda: c.post(f"{session}/messages", json={"content": "hi"}),
                "POST stream": lambda: c.post(f"{session}/stream", json={"content": "hi"}),
                "GET pins": lambda: c.get(f"{session}/pins"),
                "POST pins": lambda: c.post(f"{session}/pins", json={"text": "remember"}),
                "GET /api/v1/schedules": lambda: c.get("/api/v1/schedules"),
                "POST /api/v1/schedules": lambda: c.post(
                    "/api/v1/schedules", json=schedule_body(3600)
                ),
                "GET schedule": lambda: c.get(f"/api/v1/schedules/{sched}"),
                "POST schedule run": lambda: c.post(f"/api/v1/schedules/{sched}/run"),
                "DELETE schedule": lambda: c.delete(f"/api/v1/schedules/{sched}"),
                "POST /v1/chat/completions": lambda: c.post(
                    "/v1/chat/completions",
                    json={"model": "bot", "messages": [{"role": "user", "content": "hi"}]},
                ),
                "GET /metrics": lambda: c.get("/metrics"),
                "DELETE session": lambda: c.delete(session),
            }
            worst: dict[str, tuple[float, int]] = {}
            for name, call in calls.items():
                if only is not None and name not in only:
                    continue
                async with loop_watcher() as stalls:
                    response = await call()
                    await asyncio.sleep(0.05)  # what the request left running
                worst[name] = (max(stalls, default=0.0), response.status_code)
        for name, (stall, status) in worst.items():
            print(f"{name:28} {status}  longest stall {stall * 1000:6.0f} ms")
        stalled = {n: round(stall, 3) for n, (stall, _) in worst.items() if stall > STALL_LIMIT}
        assert not stalled
    finally:
        outage.down()
