"""SSE over a real uvicorn socket: incremental, ordered, tools included, disconnect modes."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import jsonschema  # type: ignore[import-untyped]

from duragent.config import load_workspace
from duragent.gateways.http.openapi.schemas import stream_event
from duragent.runtime import Runtime
from duragent.testing import Reply, ToolCallReply
from duragent.turns.loop import CLIENT_LEFT_RESULT
from tests.gateways.http.api_fixtures import served
from tests.polling import eventually
from tests.session.test_crash_recovery import logged_events

BASH_TOOL = "  tools:\n    - type: builtin\n      name: bash\n"


async def read_events(response: httpx.Response) -> list[tuple[float, str, Any]]:
    events: list[tuple[float, str, Any]] = []
    name = "message"
    async for line in response.aiter_lines():
        if line.startswith("event:"):
            name = line.split(":", 1)[1].strip()
        elif line.startswith("data:"):
            events.append((time.monotonic(), name, json.loads(line.split(":", 1)[1])))
            name = "message"
    return events


async def test_tokens_arrive_incrementally_and_in_order(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="warm"))  # the first turn may wait for the SDK import
        await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "hi"})
        s.server.enqueue(Reply(text="one two three four", chunk_delay=0.3))
        start = time.monotonic()
        async with s.client.stream(
            "POST", f"/api/v1/sessions/{sid}/stream", json={"content": "count"}
        ) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            events = await read_events(response)
    names = [n for _, n, _ in events]
    assert names == ["start", "token", "token", "token", "token", "done"]
    assert "".join(d["content"] for _, n, d in events if n == "token") == "one two three four"
    first_token = next(t for t, n, _ in events if n == "token")
    done = events[-1][0]
    # incremental: the first token comes long before the end of a ~0.9 s stream
    assert (first_token - start) * 3 < done - start
    assert events[-1][2]["message_id"].startswith("msg_")
    assert events[-1][2]["usage"]["total_tokens"] > 0


async def test_tools_run_in_the_stream_and_their_events_are_sent(tmp_path: Path) -> None:
    async with served(tmp_path, tools=BASH_TOOL) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(
            Reply(
                tool_calls=[
                    ToolCallReply(name="bash", arguments={"command": "echo from-bash"}, id="c1")
                ]
            ),
            Reply(text="bash said hi"),
        )
        async with s.client.stream(
            "POST", f"/api/v1/sessions/{sid}/stream", json={"content": "run"}
        ) as response:
            events = await read_events(response)
    names = [n for _, n, _ in events]
    assert names[0] == "start"
    assert names.index("tool_call") < names.index("tool_result") < names.index("done")
    call = next(d for _, n, d in events if n == "tool_call")
    assert call["name"] == "bash"
    result = next(d for _, n, d in events if n == "tool_result")
    assert result["call_id"] == "c1"
    assert "from-bash" in result["content"]


async def test_a_disconnect_in_pause_mode_keeps_the_partial_reply(tmp_path: Path) -> None:
    async with served(tmp_path, on_disconnect="pause") as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="alpha beta gamma delta epsilon", chunk_delay=0.4))
        async with s.client.stream(
            "POST", f"/api/v1/sessions/{sid}/stream", json={"content": "talk"}
        ) as response:
            async for line in response.aiter_lines():
                if line.startswith("event: token"):
                    break

        async def paused() -> bool:  # the server notices the disconnect at its next write
            info = (await s.client.get(f"/api/v1/sessions/{sid}")).json()
            return bool(info["status"] == "paused")

        assert await eventually(paused)
        messages = (await s.client.get(f"/api/v1/sessions/{sid}/messages")).json()["messages"]
    assert messages[-1]["role"] == "assistant"
    assert messages[-1]["content"].startswith("alpha")
    assert messages[-1]["content"] != "alpha beta gamma delta epsilon"


async def test_a_disconnect_in_continue_mode_finishes_in_the_background(tmp_path: Path) -> None:
    async with served(tmp_path, on_disconnect="continue") as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="alpha beta gamma", chunk_delay=0.3))
        async with s.client.stream(
            "POST", f"/api/v1/sessions/{sid}/stream", json={"content": "talk"}
        ) as response:
            async for line in response.aiter_lines():
                if line.startswith("event: token"):
                    break
        deadline = time.monotonic() + 60
        messages: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            messages = (await s.client.get(f"/api/v1/sessions/{sid}/messages")).json()["messages"]
            if messages and messages[-1]["role"] == "assistant":
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.2)
        info = (await s.client.get(f"/api/v1/sessions/{sid}")).json()
    assert messages[-1]["content"] == "alpha beta gamma"
    assert info["status"] == "active"


async def test_an_approval_pauses_the_stream_and_the_approve_endpoint_resumes(
    tmp_path: Path,
) -> None:
    policy = "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: ask\n"
    async with served(tmp_path, tools=BASH_TOOL, policy=policy) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(
            Reply(
                tool_calls=[ToolCallReply(name="bash", arguments={"command": "echo ok"}, id="c9")]
            )
        )
        async with s.client.stream(
            "POST", f"/api/v1/sessions/{sid}/stream", json={"content": "run"}
        ) as response:
            events = await read_events(response)
        names = [n for _, n, _ in events]
        assert "approval_required" in names
        assert events[-1][2]["status"] == "awaiting_approval"
        s.server.enqueue(Reply(text="it printed ok"))
        approved = await s.client.post(
            f"/api/v1/sessions/{sid}/approve", json={"call_id": "c9", "decision": "allow_once"}
        )
    assert approved.status_code == 200
    assert approved.json() == {
        "status": "complete",
        "message_id": approved.json()["message_id"],
        "content": "it printed ok",
    }


async def test_the_sync_endpoint_answers_202_when_approval_is_needed(tmp_path: Path) -> None:
    policy = "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: ask\n"
    async with served(tmp_path, tools=BASH_TOOL, policy=policy) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="bash", arguments={"command": "ls"}, id="c1")])
        )
        reply = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "list"})
    assert reply.status_code == 202
    assert reply.json() == {"session_id": sid, "call_id": "c1", "command": "ls"}


async def test_a_model_that_goes_silent_ends_the_stream_with_an_idle_timeout_error(
    tmp_path: Path,
) -> None:
    async with served(tmp_path, server_yaml="  idle_timeout_seconds: 1\n") as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="one two three", stall_after=2))  # role chunk, "one "
        async with s.client.stream(
            "POST", f"/api/v1/sessions/{sid}/stream", json={"content": "count"}
        ) as response:
            events = await read_events(response)
    names = [n for _, n, _ in events]
    assert names == ["start", "token", "error", "done"]
    assert "Stream idle timeout" in events[-2][2]["message"]
    assert "server.idle_timeout_seconds" in events[-2][2]["message"]
    assert events[-1][2]["status"] == "error"
    for _, name, data in events:  # what /openapi.json promises a client, a failed turn included
        match = [e for e in stream_event()["oneOf"] if e["properties"]["event"]["const"] == name]
        jsonschema.validate(data, match[0]["properties"]["data"]["contentSchema"])


async def test_a_disconnect_during_a_tool_records_its_result_before_the_next_turn_and_restart(
    tmp_path: Path,
) -> None:
    async with served(tmp_path, on_disconnect="pause", tools=BASH_TOOL) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(
            Reply(
                tool_calls=[ToolCallReply(name="bash", arguments={"command": "sleep 30"}, id="c1")]
            )
        )
        async with s.client.stream(
            "POST", f"/api/v1/sessions/{sid}/stream", json={"content": "run it"}
        ) as response:
            async for line in response.aiter_lines():
                if line.startswith("event: tool_call"):
                    break
        for _ in range(2_400):
            info = (await s.client.get(f"/api/v1/sessions/{sid}")).json()
            if info["status"] == "paused":
                break
            await asyncio.sleep(0.05)
        assert info["status"] == "paused"
        s.server.enqueue(Reply(text="second answer"))
        later = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "again"})
        after_turn = (await s.client.get(f"/api/v1/sessions/{sid}")).json()["status"]
        await s.runtime.aclose()  # a restart: the next runtime recovers the session from disk
        restarted = Runtime(load_workspace(tmp_path), port=0)
        await restarted.start()
        try:
            async with httpx.AsyncClient(
                base_url=f"http://127.0.0.1:{restarted.http_port}", timeout=120
            ) as client:
                after_restart = (await client.get(f"/api/v1/sessions/{sid}")).json()["status"]
        finally:
            await restarted.aclose()

    assert later.status_code == 200
    assert later.json()["content"] == "second answer"
    assert after_turn == "active"
    assert after_restart == "active"
    events = logged_events(tmp_path / ".duragent" / "sessions" / sid)
    kinds = [
        (e.type, e.data.get("call_id") or e.data.get("content") or e.data.get("to"))
        for e in events
        if e.type in ("user_message", "tool_result", "tools_skipped")
    ]
    assert kinds == [
        ("user_message", "run it"),
        ("tool_result", "c1"),
        ("user_message", "again"),
    ]
    result = next(e for e in events if e.type == "tool_result")
    assert result.data["result"]["content"] == CLIENT_LEFT_RESULT
    assert result.data["result"]["success"] is False
