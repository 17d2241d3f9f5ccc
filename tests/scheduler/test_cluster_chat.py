"""Two nodes: a due time whose chat another node serves runs there, and is delivered once.

The scheduler's loop runs on its leader (node a, started first); the chat's session lives on
node b (the person wrote to b). Before, every attempt on a met b's lease and the due time
ended in ``error`` (the month of strangers' PostgreSQL half, issue 40: its digests and
morning messages failed whenever the other node served their chat). Now a hands the attempt
to b (``scheduler.relayed``), which writes and delivers it; a records the outcome.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from duragent.runtime import Runtime
from duragent.store.postgres import PostgresRunLog
from tests.gateways.telegram.test_cluster import HOOK, post, two_nodes, update_json
from tests.polling import eventually

pytest.importorskip("tests.store.postgres_db")

CHAT = 42
STAND_UP = "stand-up in 5 minutes"
SCHEDULE = {
    "agent": "bot",
    "schedule": {"every": {"every_seconds": 3600}},
    "destination": {"gateway": "telegram", "chat_id": str(CHAT)},
    "payload": {"message": {"message": STAND_UP}},
}


def api(runtime: Runtime) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=f"http://127.0.0.1:{runtime.http_port}", timeout=30)


async def test_a_due_time_whose_chat_another_node_serves_runs_there_once(tmp_path: Path) -> None:
    async with two_nodes(tmp_path, webhook_url=HOOK) as (tg, (a, b)):
        secret = tg.calls("setWebhook")[0].params["secret_token"]
        assert await post(b, update_json(1, CHAT, 1, "hello"), secret) == 200  # b serves it
        assert await eventually(lambda: tg.sent_messages(CHAT) == ["re: hello"])
        async with api(a) as on_a, api(b) as on_b:
            made: dict[str, Any] = (await on_a.post("/api/v1/schedules", json=SCHEDULE)).json()
            sid = made["id"]

            async def b_knows_it() -> bool:  # nodes re-read the schedules every 2 s
                return (await on_b.get(f"/api/v1/schedules/{sid}")).status_code == 200

            assert await eventually(b_knows_it)
            started = await on_a.post(f"/api/v1/schedules/{sid}/run")  # a leads the loop
            assert started.status_code == 202, started.text
        log = PostgresRunLog(a.registry.store.db)  # type: ignore[attr-defined]

        def outcome() -> str | None:
            ends = [r for r in log.recent(sid, 20) if r["status"] in ("ok", "error")]
            return str(ends[-1]["status"]) if ends else None

        assert await eventually(lambda: outcome() is not None)
        assert outcome() == "ok", log.recent(sid, 20)
        steps = [r["status"] for r in log.recent(sid, 20)]
        assert steps[-3:] == ["running", "recorded", "ok"]  # b wrote that it wrote
        assert tg.sent_messages(CHAT) == ["re: hello", STAND_UP]
