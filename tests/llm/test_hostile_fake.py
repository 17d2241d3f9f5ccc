"""The fake model's hostile answers: built while sending; an endless one ends with its client."""

from __future__ import annotations

import asyncio
import json

import httpx

from duragent.testing import Reply, ScriptedLLMServer, ToolCallReply


def _openai_request() -> dict[str, object]:
    return {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


async def _read(url: str, limit: int | None = None) -> bytes:
    """The streamed body, or its first ``limit`` bytes (then the client leaves)."""
    body = b""
    async with (
        httpx.AsyncClient(timeout=120) as client,
        client.stream("POST", url, json=_openai_request()) as answer,
    ):
        async for piece in answer.aiter_bytes():
            body += piece
            if limit is not None and len(body) >= limit:
                break
    return body


def _arguments(body: bytes) -> str:
    chunks = [json.loads(line[6:]) for line in body.decode().splitlines() if line[:7] == "data: {"]
    return "".join(
        call.get("function", {}).get("arguments") or ""
        for chunk in chunks
        for choice in chunk["choices"]
        for call in choice["delta"].get("tool_calls") or []
    )


async def test_filler_makes_an_argument_of_exactly_that_size_that_is_still_json() -> None:
    call = ToolCallReply(name="bash", arguments='{"command":"echo "}', filler_bytes=200_000)
    async with ScriptedLLMServer([Reply(tool_calls=[call])]) as server:
        body = await _read(f"{server.openai_base_url}/chat/completions")
    command = json.loads(_arguments(body))["command"]
    assert command == "echo " + "x" * 200_000


async def test_an_endless_stream_stops_when_its_client_leaves() -> None:
    async with ScriptedLLMServer([Reply(text="go", endless=True)]) as server:
        body = await _read(f"{server.openai_base_url}/chat/completions", limit=1 << 20)
        assert len(body) >= 1 << 20
        # The handler noticed the client left: stopping the server does not wait for it.
        async with asyncio.timeout(120):
            await server.stop()
