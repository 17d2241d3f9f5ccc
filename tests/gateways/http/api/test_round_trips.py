"""A plain HTTP turn talks to its session twice: its message with the turn's context, its reply.

The routes used to read the session first (does it exist, has it ended; the stream also for
its disconnect policy): a third round trip to the session's actor per turn (issue 35). The
turn itself now refuses a session that does not exist or has ended, before anything is
written, and a stream learns its policy from the round trip that records its message.
"""

from __future__ import annotations

from pathlib import Path

from duragent.session.operations import SessionOps
from duragent.testing import Reply
from tests.gateways.http.api_fixtures import counted_asks, served


async def test_a_plain_http_turn_asks_its_session_twice(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        made = await s.client.post("/api/v1/sessions", json={"agent": "bot"})
        sid = made.json()["session_id"]
        asks = counted_asks(s.runtime.registry)
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


async def test_a_streamed_http_turn_asks_its_session_twice(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        asks = counted_asks(s.runtime.registry)
        s.server.enqueue(Reply(text="Hello!"))
        async with s.client.stream(
            "POST", f"/api/v1/sessions/{sid}/stream", json={"content": "hi"}
        ) as response:
            body = (await response.aread()).decode()
        turn = list(asks)
    assert response.status_code == 200, body
    assert "event: done" in body
    assert '"content": "Hello!"' in body
    assert turn == [SessionOps.add_user_message, SessionOps.add_assistant_response]


async def test_a_stream_to_a_missing_or_ended_session_is_refused_before_it_opens(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        assert (await s.client.post(f"/api/v1/sessions/{sid}/end")).status_code < 300
        ended = await s.client.post(f"/api/v1/sessions/{sid}/stream", json={"content": "hi"})
        missing = await s.client.post(
            "/api/v1/sessions/session_01ARZ3NDEKTSV4RRFFQ69G5FAV/stream", json={"content": "x"}
        )
        history = await s.client.get(f"/api/v1/sessions/{sid}/messages")
    assert ended.status_code == 404
    assert ended.headers["content-type"] == "application/problem+json"
    assert ended.json()["detail"] == (
        f"session {sid} has ended (status completed): it takes no more messages; "
        "create a new session"
    )
    assert missing.status_code == 404
    assert missing.json()["detail"] == "session not found"
    assert history.json()["messages"] == []
