"""A plain HTTP turn talks to its session twice: its message with the turn's context, its reply.

The route used to read the session first (does it exist, has it ended): a third round trip
to the session's actor per turn (issue 35). The turn itself now refuses a session that does
not exist or has ended, before anything is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duragent.session.operations import SessionOps
from duragent.session.ops import Op
from duragent.testing import Reply
from tests.gateways.http.api_fixtures import served


async def test_a_plain_http_turn_asks_its_session_twice(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        made = await s.client.post("/api/v1/sessions", json={"agent": "bot"})
        sid = made.json()["session_id"]
        registry = s.runtime.registry
        asks: list[Op[Any, ..., Any]] = []
        call = registry.call

        async def counting(session_id: str, op: Op[Any, ..., Any], *args: Any, **kw: Any) -> Any:
            asks.append(op)
            return await call(session_id, op, *args, **kw)

        registry.call = counting  # type: ignore[method-assign, assignment]
        s.server.enqueue(Reply(text="Hello!"))
        sent = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "hi"})
        turn = list(asks)
    assert sent.status_code == 200, sent.text
    assert sent.json()["content"] == "Hello!"
    assert turn == [SessionOps.add_user_message, SessionOps.add_assistant_response]


async def test_an_ended_session_is_refused_with_nothing_written(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        ended = await s.client.post(f"/api/v1/sessions/{sid}/end")
        assert ended.status_code < 300, ended.text
        sent = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "hi"})
        history = await s.client.get(f"/api/v1/sessions/{sid}/messages")
        missing = await s.client.post(
            "/api/v1/sessions/session_01ARZ3NDEKTSV4RRFFQ69G5FAV/messages", json={"content": "x"}
        )
    assert sent.status_code == 404
    assert "has ended" in sent.json()["detail"]
    assert "X-Duragent-Turn" in sent.headers or "x-duragent-turn" in sent.headers
    assert [m["content"] for m in history.json()["messages"] if m["role"] == "user"] == []
    assert missing.status_code == 404
    assert missing.json()["detail"] == "session not found"
