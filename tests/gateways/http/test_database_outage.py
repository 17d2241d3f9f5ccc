"""The PostgreSQL store going away and coming back, as an HTTP client sees it.

A TCP relay (``postgres_db.Outage``) stands between the server and the real database: cut,
every request that needs the database is a 503 naming the storage and saying it recovers by
itself; restored, the server reconnects without a restart and every session is whole (seqs
contiguous, the history replays from the database, the next turn works).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from duragent.testing import Reply
from tests.gateways.http.api_fixtures import Served, served

postgres_db = pytest.importorskip("tests.store.postgres_db")


@asynccontextmanager
async def served_through(outage: Any, root: Path) -> AsyncIterator[Served]:
    """A server whose store is a fresh schema reached through ``outage``."""
    with postgres_db.fresh_schema() as schema:
        store = f"store:\n  backend: postgres\n  dsn: '{outage.dsn}'\n  schema: {schema}\n"
        async with served(root, server_yaml=store) as s:
            yield s


async def eventually(client: httpx.AsyncClient, path: str, status: int) -> httpx.Response:
    deadline = time.monotonic() + 120  # the pool reconnects with a backoff
    while True:
        response = await client.get(path)
        if response.status_code == status:
            return response
        assert time.monotonic() < deadline, response.text
        await asyncio.sleep(0.1)


def seqs_in_database(schema_dsn: str, schema: str, sid: str) -> list[int]:
    with postgres_db.database(schema) as db:
        db.open()
        with db.transaction("test") as conn:
            rows = conn.execute(
                "SELECT e.seq FROM events e JOIN sessions s USING (session_key) "
                "WHERE s.session_id = %s ORDER BY e.seq",
                (sid,),
            ).fetchall()
    return [int(r[0]) for r in rows]


def schema_of(s: Served) -> str:
    return str(s.runtime.workspace.config.store.db_schema)


async def texts(client: httpx.AsyncClient, sid: str) -> list[tuple[str, str]]:
    response = await client.get(f"/api/v1/sessions/{sid}/messages")
    assert response.status_code == 200, response.text
    return [(m["role"], m["content"]) for m in response.json()["messages"]]


async def test_a_database_outage_is_a_clear_503_and_the_session_is_whole_after_it(
    tmp_path: Path,
) -> None:
    outage = postgres_db.Outage()
    try:
        async with served_through(outage, tmp_path) as s:
            client = s.client
            sid = (await client.post("/api/v1/sessions", json={"agent": "bot"})).json()[
                "session_id"
            ]
            s.server.enqueue(Reply(text="one"))
            first = await client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "1"})
            assert first.status_code == 200, first.text

            outage.down()
            refused = await client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "2"})
            assert refused.status_code == 503, refused.text
            assert refused.headers["content-type"] == "application/problem+json"
            assert "Retry-After" in refused.headers
            problem = refused.json()
            assert problem["storage"] == "database"
            assert "the database answers again" in problem["detail"]
            assert "reconnects by itself" in problem["detail"]
            assert "was not recorded" in problem["detail"]
            assert (await client.get(f"/api/v1/sessions/{sid}/messages")).status_code == 503
            ready = await eventually(client, "/readyz", 503)
            assert ready.json()["storage"]["writable"] is False
            assert ready.json()["storage"]["kind"] == "database"

            outage.up()
            healthy = await eventually(client, "/readyz", 200)
            assert healthy.json()["storage"] == {"kind": "database", "writable": True}
            s.server.enqueue(Reply(text="three"))
            after = await client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "3"})
            assert after.status_code == 200, after.text

            seqs = seqs_in_database(postgres_db.DSN, schema_of(s), sid)
            assert seqs == list(range(1, len(seqs) + 1))  # contiguous: nothing half-written
            live = await texts(client, sid)
            await s.runtime.registry.stop(sid)  # the next request replays it from the database
            assert await texts(client, sid) == live
            assert [c for r, c in live if r == "user"] == ["1", "3"]
            assert [c for r, c in live if r == "assistant"] == ["one", "three"]
    finally:
        outage.down()


async def new_session(s: Served) -> str:
    made = await s.client.post("/api/v1/sessions", json={"agent": "bot"})
    assert made.status_code in (200, 201), made.text
    s.server.enqueue(Reply(text="one"))
    sid = str(made.json()["session_id"])
    first = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "1"})
    assert first.status_code == 200, first.text
    return sid


async def assert_whole(s: Served, sid: str) -> list[tuple[str, str]]:
    """Seqs contiguous in the database; the history replayed from it equals the live one."""
    seqs = seqs_in_database(postgres_db.DSN, schema_of(s), sid)
    assert seqs == list(range(1, len(seqs) + 1))
    live = await texts(s.client, sid)
    await s.runtime.registry.stop(sid)
    assert await texts(s.client, sid) == live
    return live


async def test_a_reply_lost_to_the_outage_keeps_the_recorded_message_and_the_next_turn_works(
    tmp_path: Path,
) -> None:
    outage = postgres_db.Outage()
    try:
        async with served_through(outage, tmp_path) as s:
            sid = await new_session(s)
            s.server.enqueue(Reply(text="never written", delay=0.5))
            turn = asyncio.create_task(
                s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "2"})
            )
            for _ in range(12_000):  # the message is recorded once the model is asked
                if len(s.server.requests) >= 2:
                    break
                await asyncio.sleep(0.01)
            outage.down()
            failed = await turn
            assert failed.status_code == 503, failed.text
            assert failed.json()["message_recorded"] is True
            assert "do not send it again" in failed.json()["detail"]

            outage.up()
            await eventually(s.client, "/readyz", 200)
            s.server.enqueue(Reply(text="three"))
            after = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "3"})
            assert after.status_code == 200, after.text
            live = await assert_whole(s, sid)
            assert [c for r, c in live if r == "user"] == ["1", "2", "3"]
            assert [c for r, c in live if r == "assistant"] == ["one", "three"]
    finally:
        outage.down()


async def test_a_message_whose_commit_answer_was_lost_is_recorded_once_when_sent_again(
    tmp_path: Path,
) -> None:
    outage = postgres_db.Outage()
    try:
        async with served_through(outage, tmp_path) as s:
            sid = await new_session(s)
            outage.lose_next_commit_answer()  # the message's append commits; its answer is lost
            failed = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "2"})
            assert failed.status_code == 503, failed.text
            assert outage.commits_lost == 1
            assert "was not recorded" in failed.json()["detail"]

            outage.up()
            await eventually(s.client, "/readyz", 200)
            s.server.enqueue(Reply(text="two"))
            again = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "2"})
            assert again.status_code == 200, again.text
            live = await assert_whole(s, sid)
            assert [c for r, c in live if r == "user"] == ["1", "2"]
            assert [c for r, c in live if r == "assistant"] == ["one", "two"]
    finally:
        outage.down()
