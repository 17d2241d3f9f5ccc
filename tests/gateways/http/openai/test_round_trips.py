"""A completion that names its session talks to it twice: its message with context, its reply.

The endpoint used to read the session first (is it this model's agent, has it ended; a
stream also for its disconnect policy): a third round trip to the session's actor per turn
(issue 35). The turn now refuses a session of another agent, or an ended one, itself, before
anything is written (and before a stream opens).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx

from duragent.config import load_workspace
from duragent.runtime import Runtime
from duragent.session.operations import SessionOps
from duragent.testing import Reply, ScriptedLLMServer
from tests.gateways.http.api_fixtures import counted_asks, served, write_workspace


async def test_a_completion_continuing_a_session_asks_it_twice(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        asks = counted_asks(s.runtime.registry)
        s.server.enqueue(Reply(text="Hello!"))
        sent = await s.client.post(
            "/v1/chat/completions",
            json={"model": "bot", "messages": [{"role": "user", "content": "hi"}], "user": sid},
        )
        turn = list(asks)
    assert sent.status_code == 200, sent.text
    assert sent.json()["choices"][0]["message"]["content"] == "Hello!"
    assert sent.headers["x-duragent-session"] == sid
    assert turn == [SessionOps.add_user_message, SessionOps.add_assistant_response]


async def test_a_streamed_completion_continuing_a_session_asks_it_twice(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        asks = counted_asks(s.runtime.registry)
        s.server.enqueue(Reply(text="Hello!"))
        body = {
            "model": "bot",
            "messages": [{"role": "user", "content": "hi"}],
            "session_id": sid,
            "stream": True,
        }
        async with s.client.stream("POST", "/v1/chat/completions", json=body) as response:
            text = (await response.aread()).decode()
        turn = list(asks)
    assert response.status_code == 200, text
    assert response.headers["x-duragent-session"] == sid
    assert '"content":"Hello!"' in text.replace(" ", "")
    assert text.rstrip().endswith("data: [DONE]")
    assert turn == [SessionOps.add_user_message, SessionOps.add_assistant_response]


async def test_a_keyed_conversation_asks_its_session_twice_once_it_exists(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        body = {"model": "bot", "messages": [{"role": "user", "content": "hi"}], "user": "ann"}
        s.server.enqueue(Reply(text="first"))
        assert (await s.client.post("/v1/chat/completions", json=body)).status_code == 200
        asks = counted_asks(s.runtime.registry)
        s.server.enqueue(Reply(text="second"))
        sent = await s.client.post("/v1/chat/completions", json=body)
        turn = list(asks)
    assert sent.status_code == 200, sent.text
    assert turn == [SessionOps.add_user_message, SessionOps.add_assistant_response]


async def test_a_session_of_another_agent_is_refused_with_nothing_written(
    tmp_path: Path,
) -> None:
    async with ScriptedLLMServer() as llm:
        write_workspace(tmp_path, llm.openai_base_url)
        agents = tmp_path / ".duragent" / "agents"
        shutil.copytree(agents / "bot", agents / "other")
        spec = agents / "other" / "agent.yaml"
        spec.write_text(spec.read_text().replace("name: bot", "name: other", 1))
        runtime = Runtime(load_workspace(tmp_path), port=0)
        await runtime.start()
        try:
            base = f"http://127.0.0.1:{runtime.http_port}"
            async with httpx.AsyncClient(base_url=base, timeout=120) as client:
                made = await client.post("/api/v1/sessions", json={"agent": "bot"})
                sid = made.json()["session_id"]
                sent = await client.post(
                    "/v1/chat/completions",
                    json={
                        "model": "other",
                        "messages": [{"role": "user", "content": "hi"}],
                        "session_id": sid,
                    },
                )
                history = await client.get(f"/api/v1/sessions/{sid}/messages")
        finally:
            await runtime.aclose()
    assert sent.status_code == 400, sent.text
    error = sent.json()["error"]
    assert error["code"] == "session_agent_mismatch"
    assert error["param"] == "session_id"
    assert "belongs to agent 'bot', not 'other'" in error["message"]
    assert history.json()["messages"] == []
    assert llm.requests == []


async def test_a_stream_to_an_ended_session_is_refused_before_it_opens(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        assert (await s.client.post(f"/api/v1/sessions/{sid}/end")).status_code < 300
        body = {
            "model": "bot",
            "messages": [{"role": "user", "content": "hi"}],
            "session_id": sid,
            "stream": True,
        }
        sent = await s.client.post("/v1/chat/completions", json=body)
        history = await s.client.get(f"/api/v1/sessions/{sid}/messages")
    assert sent.status_code == 404, sent.text
    error = sent.json()["error"]
    assert (error["code"], error["param"]) == ("session_ended", "session_id")
    assert history.json()["messages"] == []
    assert s.server.requests == []
