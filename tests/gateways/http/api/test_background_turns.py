"""Turns that outlive their request belong to the runtime's task owner, not to a global set."""

from __future__ import annotations

import time
from pathlib import Path

from duragent.testing import Reply
from tests.gateways.http.api_fixtures import served
from tests.polling import eventually
from tests.session.test_crash_recovery import logged_events

SHORT_REQUESTS = "  request_timeout_seconds: 1\n"


async def test_a_turn_past_the_request_timeout_goes_on_under_the_task_owner(
    tmp_path: Path,
) -> None:
    async with served(tmp_path, server_yaml=SHORT_REQUESTS) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="late answer", delay=1.5))
        reply = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "hi"})
        assert reply.status_code == 408
        assert len(s.runtime.tasks) == 1

        async def answered() -> bool:
            got = await s.client.get(f"/api/v1/sessions/{sid}/messages")
            return bool(got.json()["messages"][-1]["content"] == "late answer")

        assert await eventually(answered)
        assert await eventually(lambda: len(s.runtime.tasks) == 0)


async def test_a_turn_still_running_at_shutdown_is_cancelled_by_stop(tmp_path: Path) -> None:
    async with served(tmp_path, server_yaml=SHORT_REQUESTS) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="never sent", delay=600))
        reply = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "hi"})
        assert reply.status_code == 408
        assert len(s.runtime.tasks) == 1
        began = time.monotonic()
        await s.runtime.aclose()
        assert time.monotonic() - began < 120  # not the model's 600 s
        assert len(s.runtime.tasks) == 0
    events = logged_events(tmp_path / ".duragent" / "sessions" / sid)
    assert "never sent" not in [e.data.get("content") for e in events]
