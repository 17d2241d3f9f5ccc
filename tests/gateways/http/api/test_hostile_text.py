"""A message or a memory made of one huge whitespace run is an ordinary message.

~1 M spaces made tiktoken panic (a ``BaseException``): a bare 500, and every later turn of
the session failed, also after a restart. These tests run real turns on a real server.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from duragent.testing import Reply, ToolCallReply
from tests.gateways.http.api_fixtures import Served, served

RUNS = {
    "spaces": " " * 1_000_000,
    "tabs": "\t" * 1_000_000,
    "nbsp": "\u00a0" * 1_000_000,
    "mixed": " \t\u00a0\n" * 250_000,
}
MEMORY_TOOL = "  tools:\n    - type: builtin\n      name: memory\n"


async def say(s: Served, sid: str, content: str) -> int:
    """POST a message as raw UTF-8 JSON (NBSP escaped as ``\\u00a0`` would pass 2 MiB)."""
    body = json.dumps({"content": content}, ensure_ascii=False).encode()
    reply = await s.client.post(
        f"/api/v1/sessions/{sid}/messages",
        content=body,
        headers={"content-type": "application/json"},
    )
    return reply.status_code


@pytest.mark.parametrize("kind", sorted(RUNS))
async def test_a_whitespace_run_in_a_message_leaves_the_session_working_also_after_restart(
    tmp_path: Path, kind: str
) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="got it"), Reply(text="still here"), Reply(text="here"))
        # Either answered or refused as too large for the window (a clear 502), never a 500.
        assert await say(s, sid, "look:" + RUNS[kind]) in (200, 502)
        assert await say(s, sid, "hello again") == 200
    async with served(tmp_path) as s:
        s.server.enqueue(Reply(text="after restart"))
        assert await say(s, sid, "and now?") == 200
        last = await s.client.get(f"/api/v1/sessions/{sid}/messages", params={"limit": 1})
    assert [m["content"] for m in last.json()["messages"]] == ["after restart"]


async def test_memory_recall_works_when_world_memory_holds_a_whitespace_run(
    tmp_path: Path,
) -> None:
    world = tmp_path / ".duragent" / "memory" / "world"
    world.mkdir(parents=True)
    (world / "poison.md").write_text("start" + RUNS["spaces"] + "end\n", encoding="utf-8")
    async with served(tmp_path, tools=MEMORY_TOOL) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        recall = ToolCallReply(name="memory", arguments={"action": "recall"}, id="c1")
        s.server.enqueue(Reply(tool_calls=[recall]), Reply(text="recalled"), Reply(text="next"))
        assert await say(s, sid, "what do you know?") == 200
        assert await say(s, sid, "and then?") == 200
        messages = (await s.client.get(f"/api/v1/sessions/{sid}/messages")).json()["messages"]
    assert [m["content"] for m in messages if m["role"] == "assistant"][-2:] == ["recalled", "next"]
