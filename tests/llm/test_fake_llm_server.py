"""The fake LLM server itself: the exact bytes it sends, its script, its record, its modes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from duragent.testing import (
    EXHAUSTED_STATUS,
    Fault,
    RecordedRequest,
    Reply,
    ScriptedLLMServer,
    ToolCallReply,
    item_from_json,
    item_to_json,
)

CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"


@pytest.fixture
async def client(server: ScriptedLLMServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        yield http


def sse_data(text: str) -> list[str]:
    """The ``data:`` payloads of an SSE body, in order."""
    return [line[6:] for line in text.split("\n") if line.startswith("data: ")]


def sse_events(text: str) -> list[tuple[str, dict[str, Any]]]:
    """``(event name, data)`` pairs of a named-event SSE body."""
    out = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        out.append((lines["event"], json.loads(lines["data"])))
    return out


async def test_an_openai_stream_has_role_text_tool_fragments_finish_usage_and_done(
    server: ScriptedLLMServer, client: httpx.AsyncClient
) -> None:
    call = ToolCallReply(name="weather", arguments={"city": "Oslo"})
    server.enqueue(Reply(text="Hi there", tool_calls=[call], argument_fragment_size=5))
    body = {"model": "m", "stream": True, "stream_options": {"include_usage": True}}
    response = await client.post(CHAT, json=body)
    assert response.headers["content-type"].startswith("text/event-stream")
    data = sse_data(response.text)
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    texts = [c["choices"][0]["delta"].get("content") for c in chunks if c["choices"]]
    assert "".join(t for t in texts if t) == "Hi there"
    fragments = [
        tc for c in chunks if c["choices"] for tc in c["choices"][0]["delta"].get("tool_calls", [])
    ]
    assert fragments[0]["id"] == "call_fake_0_0"
    assert fragments[0]["function"]["name"] == "weather"
    assert all("id" not in f and "name" not in f["function"] for f in fragments[1:])
    assert len(fragments) > 3
    assert "".join(f["function"]["arguments"] for f in fragments) == '{"city":"Oslo"}'
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["total_tokens"] == 10 + 3


async def test_an_openai_stream_has_no_usage_chunk_unless_asked(
    server: ScriptedLLMServer, client: httpx.AsyncClient
) -> None:
    server.enqueue(Reply(text="Hi"))
    response = await client.post(CHAT, json={"model": "m", "stream": True})
    chunks = [json.loads(d) for d in sse_data(response.text)[:-1]]
    assert all(c["choices"] for c in chunks)
    assert all("usage" not in c for c in chunks)


async def test_an_anthropic_stream_follows_the_real_event_sequence(
    server: ScriptedLLMServer, client: httpx.AsyncClient
) -> None:
    call = ToolCallReply(id="toolu_x", name="weather", arguments={"city": "Oslo"})
    server.enqueue(Reply(text="Hi there", tool_calls=[call], argument_fragment_size=6))
    response = await client.post(MESSAGES, json={"model": "claude", "stream": True})
    events = sse_events(response.text)
    kinds = [kind for kind, _ in events]
    assert kinds == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert all(data["type"] == kind for kind, data in events)
    assert events[0][1]["message"]["model"] == "claude"
    assert events[6][1]["content_block"] == {
        "type": "tool_use",
        "id": "toolu_x",
        "name": "weather",
        "input": {},
    }
    partial = "".join(d["delta"]["partial_json"] for k, d in events[7:10])
    assert json.loads(partial) == {"city": "Oslo"}
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    assert events[-2][1]["usage"] == {"output_tokens": 3}


async def test_plain_answers_have_each_api_shape(
    server: ScriptedLLMServer, client: httpx.AsyncClient
) -> None:
    call = ToolCallReply(name="weather", arguments='{"city": "Oslo"}')
    server.enqueue(Reply(text="Hi", tool_calls=[call]), Reply(text="Hi", tool_calls=[call]))
    openai = (await client.post(CHAT, json={"model": "m"})).json()
    assert openai["object"] == "chat.completion"
    message = openai["choices"][0]["message"]
    assert message["tool_calls"][0]["function"] == {
        "name": "weather",
        "arguments": '{"city": "Oslo"}',
    }
    anthropic = (await client.post(MESSAGES, json={"model": "c"})).json()
    assert anthropic["type"] == "message"
    assert [b["type"] for b in anthropic["content"]] == ["text", "tool_use"]
    assert anthropic["content"][1]["input"] == {"city": "Oslo"}
    assert anthropic["usage"] == {"input_tokens": 10, "output_tokens": 2}


async def test_faults_use_the_error_format_of_the_endpoint_called(
    server: ScriptedLLMServer, client: httpx.AsyncClient
) -> None:
    server.enqueue(Fault.rate_limited(retry_after=3), Fault.rate_limited(retry_after=3))
    openai = await client.post(CHAT, json={})
    anthropic = await client.post(MESSAGES, json={})
    assert openai.status_code == anthropic.status_code == 429
    assert openai.headers["retry-after"] == anthropic.headers["retry-after"] == "3"
    assert openai.json()["error"]["type"] == "rate_limit_exceeded"
    assert anthropic.json()["type"] == "error"
    assert anthropic.json()["error"]["type"] == "rate_limit_error"


async def test_context_overflow_faults_use_each_api_wording(
    server: ScriptedLLMServer, client: httpx.AsyncClient
) -> None:
    server.enqueue(Fault.context_length_exceeded(), Fault.context_length_exceeded())
    openai = (await client.post(CHAT, json={})).json()["error"]
    anthropic = (await client.post(MESSAGES, json={})).json()["error"]
    assert openai["code"] == "context_length_exceeded"
    assert anthropic["type"] == "invalid_request_error"
    assert anthropic["message"].startswith("prompt is too long")


async def test_a_fault_body_and_headers_can_be_given_verbatim(
    server: ScriptedLLMServer, client: httpx.AsyncClient
) -> None:
    server.enqueue(Fault(status=503, body="upstream down", headers={"X-Trace": "t1"}))
    response = await client.post(CHAT, json={})
    assert (response.status_code, response.text) == (503, "upstream down")
    assert response.headers["x-trace"] == "t1"


async def test_every_request_is_recorded_with_headers_and_parsed_body(
    server: ScriptedLLMServer, client: httpx.AsyncClient
) -> None:
    server.enqueue(Reply(text="a"), Reply(text="b"))
    await client.post(CHAT, json={"model": "m", "messages": []}, headers={"X-Custom": "1"})
    await client.post(MESSAGES, content=b"not json")
    first, second = server.requests
    assert (first.index, first.method, first.path, first.wire) == (0, "POST", CHAT, "openai")
    assert first.headers["x-custom"] == "1"
    assert first.json == {"model": "m", "messages": []}
    assert not first.stream
    assert (second.wire, second.body, second.raw) == ("anthropic", None, b"not json")
    assert server.last_request is second


async def test_an_exhausted_script_answers_418_naming_the_request(
    server: ScriptedLLMServer, client: httpx.AsyncClient
) -> None:
    response = await client.post(CHAT, json={})
    assert response.status_code == EXHAUSTED_STATUS
    assert "script exhausted at request #0" in response.json()["error"]["message"]


async def test_a_responder_computes_answers_once_the_queue_is_empty(
    server: ScriptedLLMServer, client: httpx.AsyncClient
) -> None:
    async def echo(request: RecordedRequest) -> Reply:
        return Reply(text=f"you sent {len(request.json['messages'])} messages")

    server.responder = echo
    server.enqueue(Reply(text="queued first"))
    first = (await client.post(CHAT, json={"messages": [1]})).json()
    second = (await client.post(CHAT, json={"messages": [1, 2]})).json()
    assert first["choices"][0]["message"]["content"] == "queued first"
    assert second["choices"][0]["message"]["content"] == "you sent 2 messages"
    server.responder = lambda request: Fault.overloaded()
    assert (await client.post(MESSAGES, json={})).status_code == 529


async def test_stopping_the_server_answers_a_request_still_in_its_delay_at_once() -> None:
    arrived = asyncio.Event()
    server = ScriptedLLMServer(
        [Reply(text="slow", delay=600)], on_request=lambda request: arrived.set()
    )
    await server.start()
    async with httpx.AsyncClient(base_url=server.base_url, timeout=600) as http:
        pending = asyncio.create_task(http.post(CHAT, json={}))
        await arrived.wait()
        await asyncio.wait_for(server.stop(), 60)  # not the delay's 600 s
        response = await asyncio.wait_for(pending, 60)
    assert response.status_code == 503
    assert "shutting down" in response.json()["error"]["message"]


def test_script_items_round_trip_through_json() -> None:
    items: list[Reply | Fault] = [
        Reply(
            text="hi",
            tool_calls=(ToolCallReply(name="t", arguments={"a": 1}, id="x"),),
            chunks=("h", "i"),
            stream_error=Fault.overloaded(),
        ),
        Fault(status=429, retry_after=2, headers={"x": "y"}),
    ]
    assert [item_from_json(json.loads(json.dumps(item_to_json(i)))) for i in items] == items
    assert item_from_json({"text": "short form"}) == Reply(text="short form")
    assert item_from_json({"status": 500}) == Fault(status=500)
    with pytest.raises(TypeError):
        item_from_json({"txet": "typo"})


def test_the_server_runs_in_a_thread_for_synchronous_callers() -> None:
    with (
        ScriptedLLMServer([Reply(text="from a thread")]) as server,
        httpx.Client(base_url=server.base_url) as http,
    ):
        body = http.post(CHAT, json={"model": "m"}).json()
        assert body["choices"][0]["message"]["content"] == "from a thread"
        server.enqueue(Reply(text="enqueued later"))
        assert http.post(MESSAGES, json={}).json()["content"][0]["text"] == "enqueued later"
    assert len(server.requests) == 2


def test_the_command_line_server_serves_a_script_file_and_records_requests(
    tmp_path: Path,
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "from the file"}]))
    record = tmp_path / "requests.jsonl"
    command = [sys.executable, "-m", "duragent.testing.fake_llm_server", "--port", "0"]
    command += ["--script", str(script), "--record", str(record), "--reply-text", "default"]
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as child:
        try:
            assert child.stdout is not None
            line = child.stdout.readline()
            assert line.startswith("listening on http://127.0.0.1:"), line
            base_url = line.split()[-1]
            with httpx.Client(base_url=base_url) as http:
                first = http.post(CHAT, json={"model": "m"}).json()
                second = http.post(MESSAGES, json={"model": "c"}).json()
                extra = [{"status": 503}]
                assert http.post("/_fake/script", json=extra).json() == {"pending": 1}
                assert http.post(CHAT, json={}).status_code == 503
                seen = http.get("/_fake/requests").json()
        finally:
            child.send_signal(signal.SIGTERM)
            assert child.wait(timeout=120) == 0
    assert first["choices"][0]["message"]["content"] == "from the file"
    assert second["content"][0]["text"] == "default"
    assert [r["path"] for r in seen] == [CHAT, MESSAGES, CHAT]
    recorded = [json.loads(line) for line in record.read_text().splitlines()]
    assert [r["body"] for r in recorded] == [{"model": "m"}, {"model": "c"}, {}]


async def test_the_server_says_how_many_answers_it_finished_and_how_long_they_took(
    server: ScriptedLLMServer, client: httpx.AsyncClient
) -> None:
    server.enqueue(Reply(text="a b c", chunk_delay=0.02), Reply(text="b"))
    assert (await client.get("/_fake/served")).json() == {"requests": 0, "seconds": 0.0}
    await client.post(CHAT, json={"model": "m", "stream": True})
    await client.post(MESSAGES, json={"model": "c"})
    await client.get("/_fake/requests")  # the admin routes are not model answers
    answered, seconds = server.served
    assert answered == 2
    assert seconds > 0
    assert (await client.get("/_fake/served")).json() == {"requests": 2, "seconds": seconds}
