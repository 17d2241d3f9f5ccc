"""``store: {backend: postgres}`` in duragent.yaml: the server keeps its sessions in PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from duragent.config import load_workspace
from duragent.runtime import Runtime
from tests.store import postgres_db


async def test_a_session_created_over_http_lives_in_the_database(
    tmp_path: Path, write_agent: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_agent("alpha")
    with postgres_db.fresh_schema() as schema:
        (tmp_path / "duragent.yaml").write_text(
            f"store:\n  backend: postgres\n  dsn: ${{PG_TEST_DSN}}\n  schema: {schema}\n"
        )
        monkeypatch.setenv("PG_TEST_DSN", postgres_db.DSN)
        runtime = Runtime(load_workspace(tmp_path), port=0)
        await runtime.start()
        try:
            base = f"http://127.0.0.1:{runtime.http_port}"
            async with httpx.AsyncClient(base_url=base) as client:
                made = await client.post("/api/v1/sessions", json={"agent": "alpha"})
                assert made.status_code in (200, 201), made.text
                sid = made.json()["session_id"]
                sent = await client.post(
                    f"/api/v1/sessions/{sid}/messages", json={"content": "hello"}
                )
                assert sent.status_code == 200, sent.text
                assert (await client.get("/readyz")).status_code == 200
        finally:
            await runtime.aclose()
        assert not (tmp_path / ".duragent" / "sessions" / sid).exists()  # not on disk
        with postgres_db.database(schema) as db:
            db.open()
            with db.transaction("test") as conn:
                row = conn.execute(
                    "SELECT s.owner_node, count(e.seq) FROM sessions s JOIN events e "
                    "USING (session_key) WHERE s.session_id = %s GROUP BY s.owner_node",
                    (sid,),
                ).fetchone()
        assert row is not None
        assert row[0] is None  # the lease was given back when the server stopped
        assert row[1] >= 2  # the message and the reply are events in the database


@pytest.mark.slow  # ~4 s: the pool reconnects with a backoff; the store-level test is quick
async def test_readyz_reports_the_database_going_away_and_coming_back(
    tmp_path: Path, write_agent: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_agent("alpha")
    outage = postgres_db.Outage()
    with postgres_db.fresh_schema() as schema:
        (tmp_path / "duragent.yaml").write_text(
            f"store:\n  backend: postgres\n  dsn: ${{PG_TEST_DSN}}\n  schema: {schema}\n"
        )
        monkeypatch.setenv("PG_TEST_DSN", outage.dsn)
        runtime = Runtime(load_workspace(tmp_path), port=0)
        await runtime.start()
        try:
            base = f"http://127.0.0.1:{runtime.http_port}"
            async with httpx.AsyncClient(base_url=base) as client:
                assert (await client.get("/readyz")).status_code == 200
                outage.down()
                down = await eventually_status(client, 503)
                assert "the session store cannot write" in down["detail"]
                assert down["storage"]["writable"] is False
                outage.up()
                await eventually_status(client, 200)
        finally:
            await runtime.aclose()
            outage.down()


async def eventually_status(client: httpx.AsyncClient, status: int) -> dict[str, Any]:
    deadline = asyncio.get_running_loop().time() + 120
    while True:
        response = await client.get("/readyz")
        if response.status_code == status:
            return dict(response.json())
        assert asyncio.get_running_loop().time() < deadline, response.text
        await asyncio.sleep(0.1)
