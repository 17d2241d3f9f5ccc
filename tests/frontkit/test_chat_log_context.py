"""A chat turn's log lines name the chat's front end, agent, session and turn.

The turn is the one production runs: the message offered to the chat queue, its turn run by
``ChatTurns.answer`` in the queue's drain (a task of the runtime's, not of the caller).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duragent.frontkit import MemoryOutbound
from duragent.observability.logctx import current
from duragent.testing import Reply, ToolCallReply
from tests.frontkit.test_chat import chat_kit
from tests.turns.turn_fixtures import FnTool


async def test_a_tool_of_a_chat_turn_runs_under_the_chats_log_fields(tmp_path: Path) -> None:
    seen: list[dict[str, str]] = []

    async def look(args: Any) -> str:
        seen.append(dict(current()))
        return "looked"

    outbound = MemoryOutbound()
    async with chat_kit(tmp_path, outbound, tools=[FnTool("look", look)]) as kit:
        for turn in ("1", "2"):
            kit.h.server.enqueue(
                Reply(tool_calls=[ToolCallReply(name="look", arguments={}, id=f"c{turn}")]),
                Reply(text=f"done {turn}"),
            )
            sid = await kit.send(f"look {turn}", f"p{turn}")
            assert await kit.settled()
    assert [(s["front_end"], s["agent"], s["session_id"]) for s in seen] == [
        ("telegram", "bot", sid)
    ] * 2
    assert seen[0]["turn_id"].startswith("turn_")
    assert seen[0]["turn_id"] != seen[1]["turn_id"]
    assert dict(current()) == {}
