"""``store: {backend: postgres}`` in duragent.yaml: the server keeps its sessions in PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

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
