"""Each session's line: writes that are not turns land between turns, and waits need no polling."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from duragent.testing import Reply, ToolCallReply
from duragent.turns import AwaitingApproval, Complete
from duragent.turns.lines import Lines
from tests.polling import eventually
from tests.turns.test_approval import ASK
from tests.turns.test_turn import events_of
from tests.turns.turn_fixtures import FnTool, harness


async def test_a_scheduled_message_posted_during_a_turn_lands_after_the_turns_records(
    tmp_path: Path,
) -> None:
    """The scheduler used to poll ``is_running`` and then write: a turn could start in
    between, and its tool call and result were split by the scheduled message."""
    gate, started = asyncio.Event(), asyncio.Event()

    async def hold(args: Any) -> str:
        started.set()
        await gate.wait()
        return "held"

    async with harness(tmp_path, tools=[FnTool("hold", hold)]) as h:
        h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="hold", id="h1")]), Reply(text="done")
        )
        sid = await h.runner.start_session("bot")
        turn = asyncio.create_task(h.runner.run(sid, "go"))
        assert await eventually(started.is_set)
        posted = asyncio.create_task(h.runner.post(sid, "Reminder: water the plants"))
        await asyncio.sleep(0)
        assert not posted.done()  # waits for the turn, which is inside its tool call
        gate.set()
        assert isinstance(await turn, Complete)
        await posted
        kinds = [(str(e.type), e.data.get("content")) for e in await events_of(h, sid)]
    texts = [content for kind, content in kinds if kind == "assistant_response" and content]
    assert texts == ["done", "Reminder: water the plants"]
    tool_result = next(i for i, (kind, _) in enumerate(kinds) if kind == "tool_result")
    reminder = next(i for i, (_, c) in enumerate(kinds) if c == "Reminder: water the plants")
    assert tool_result < reminder


async def test_a_wait_for_a_decision_ends_when_the_approval_is_decided(tmp_path: Path) -> None:
    echo = FnTool("echo", lambda args: "echoed")
    async with harness(tmp_path, tools=[echo], policy=ASK) as h:
        h.server.enqueue(Reply(tool_calls=[ToolCallReply(name="echo", id="c1")]))
        sid = await h.runner.start_session("bot")
        assert isinstance(await h.runner.run(sid, "echo please"), AwaitingApproval)
        waiting = asyncio.create_task(h.runner.approval_decided(sid))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        h.server.enqueue(Reply(text="Echoed."))
        await h.runner.approve(sid, "c1", "allow_once")
        await asyncio.wait_for(waiting, 60)  # woken by the decision, not by a poll


async def test_a_wait_for_a_loop_returns_at_once_when_none_runs() -> None:
    lines = Lines()
    await asyncio.wait_for(lines.loop_ended("session_x"), 60)
    assert len(lines) == 0


async def test_a_line_is_forgotten_once_nobody_holds_it() -> None:
    lines = Lines()
    with lines.hold("a") as line:
        assert lines.steered("a") == []
        assert line.loop_running() is None
        assert len(lines) == 1
    assert len(lines) == 0
    async with lines.between_turns("b"):
        assert len(lines) == 1
    assert len(lines) == 0
