"""With the database away, no HTTP request stalls the event loop that serves every session.

Each route is called once while the PostgreSQL store is cut off (``postgres_db.Outage``).
A database call made on the event loop waits out the pool's timeout (~1 s) and every other
session of the node waits with it; made from a thread, it stalls only its own request. So the
check is where each wait for the database runs (``Database``'s borrow and ping, recorded with
the thread's running event loop, if any), not how long the loop was late: a loaded machine
delays a sleep as much as a blocking call does, and the thread does not depend on the clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from duragent.store.postgres.connection import Database
from tests.gateways.http.test_database_outage import served_through

postgres_db = pytest.importorskip("tests.store.postgres_db")


def schedule_body(every_seconds: int) -> dict[str, object]:
    return {
        "agent": "bot",
        "schedule": {"every": {"every_seconds": every_seconds}},
        "payload": {"message": {"message": "hi"}},
    }


def _on_an_event_loop() -> bool:
    """Whether the calling thread is running an event loop (then a blocking call stalls it)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@contextmanager
def waits_on_the_loop(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The ``Database`` waits (borrow a connection, ping) made on an event loop, while inside."""
    found: list[str] = []
    for name in ("_borrow", "ping"):
        original = getattr(Database, name)

        def watched(self: Database, *args: Any, _name: str = name, _f: Any = original) -> Any:
            if _on_an_event_loop():
                found.append(_name)
            return _f(self, *args)

        monkeypatch.setattr(Database, name, watched)
    try:
        yield found
    finally:
        monkeypatch.undo()


SHORT = ("POST /api/v1/schedules", "GET schedule", "DELETE schedule")
"""The routes of the default suite's version: the ones that stalled before (schedules)."""


@pytest.mark.slow  # ~19 s: each route waits the pool's timeout once, in a thread
async def test_no_route_stalls_the_event_loop_while_the_database_is_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await assert_no_stalls(tmp_path, monkeypatch, only=None)


async def test_schedule_routes_do_not_stall_the_event_loop_while_the_database_is_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await assert_no_stalls(tmp_path, monkeypatch, only=SHORT)


async def assert_no_stalls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, only: tuple[str, ...] | None
) -> None:
    """Call each route (``only`` those) with the database cut; none may wait on the loop."""
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
            on_loop: dict[str, tuple[list[str], int]] = {}
            for name, call in calls.items():
                if only is not None and name not in only:
                    continue
                with waits_on_the_loop(monkeypatch) as found:
                    response = await call()
                    await asyncio.sleep(0.05)  # what the request left running
                on_loop[name] = (found, response.status_code)
        for name, (found, status) in on_loop.items():
            print(f"{name:28} {status}  database waits on the event loop: {found}")
        stalled = {n: found for n, (found, _) in on_loop.items() if found}
        assert not stalled
    finally:
        outage.down()
