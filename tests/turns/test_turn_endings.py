"""How turns begin and end around tools: the call is on disk before a tool starts, every call
a turn started has a result when the turn is over, and a new turn resumes a paused chat."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from duragent.core.messages import ToolCall
from duragent.core.snapshot import SessionStatus
from duragent.errors import LLMConnectionError
from duragent.session.state import INTERRUPTED_RESULT, UNFINISHED_RESULT
from duragent.testing import Reply, ToolCallReply
from duragent.turns.endings import apology
from duragent.turns.loop import cancelled_result
from tests.turns.test_turn import on_disk
from tests.turns.turn_fixtures import FnTool, harness

ASK = "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: ask\n"


def call(name: str, call_id: str) -> Reply:
    return Reply(tool_calls=[ToolCallReply(name=name, arguments={"x": "1"}, id=call_id)])


def results(logged: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["call_id"], e["result"]["content"]) for e in logged if e["type"] == "tool_result"]


async def test_a_call_is_on_disk_before_its_tool_starts(tmp_path: Path) -> None:
    seen: list[list[str]] = []
    sid = ""

    def look(args: Any) -> str:
        logged = on_disk(tmp_path, sid)
        seen.append([c["call_id"] for e in logged for c in e.get("tool_calls") or []])
        return "looked"

    async with harness(tmp_path, tools=[FnTool("look", look)]) as h:
        h.server.enqueue(call("look", "c1"), Reply(text="done"))
        sid = await h.runner.start_session("bot")
        await h.runner.run(sid, "go")
    assert seen == [["c1"]]


async def test_an_approved_call_cancelled_while_it_runs_gets_a_cancelled_result(
    tmp_path: Path,
) -> None:
    running = asyncio.Event()

    async def hang(args: Any) -> str:
        running.set()
        await asyncio.Event().wait()
        return "never"

    async with harness(tmp_path, tools=[FnTool("slow", hang)], policy=ASK) as h:
        h.server.enqueue(call("slow", "c1"))
        sid = await h.runner.start_session("bot")
        assert (await h.runner.run(sid, "go")).status == "awaiting_approval"
        task = asyncio.create_task(h.runner.approve(sid, "c1", "allow_once"))
        await running.wait()
        task.cancel("the operator stopped it")
        with pytest.raises(asyncio.CancelledError):
            await task
        logged = on_disk(tmp_path, sid)
    assert results(logged) == [("c1", cancelled_result("the operator stopped it"))]


async def test_a_call_an_earlier_turn_left_open_is_closed_before_the_next_message(
    tmp_path: Path,
) -> None:
    # A turn whose own closing write failed leaves its call open; the next turn closes it
    # *before* its message, so a later restart has nothing to append after later turns.
    async with harness(tmp_path) as h:
        sid = await h.runner.start_session("bot")
        session = h.registry.handle(sid)
        await session.add_user_message("first")
        await session.add_assistant_response(
            "",
            tool_calls=(ToolCall(id="c1", name="echo", arguments="{}"),),
            durable=True,
        )
        h.server.enqueue(Reply(text="second answer"))
        await h.runner.run(sid, "second")
    async with harness(tmp_path) as restarted:
        await restarted.registry.info(sid)  # recovery: nothing left to repair
    logged = on_disk(tmp_path, sid)
    order = [e.get("content") or e.get("call_id") for e in logged if e["type"] != "session_start"]
    assert order == ["first", None, "c1", "second", "second answer"]
    assert results(logged) == [("c1", UNFINISHED_RESULT)]
    assert INTERRUPTED_RESULT not in str(logged)


async def test_a_new_turn_makes_a_paused_session_active(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        sid = await h.runner.start_session("bot")
        await h.runner.set_status(sid, SessionStatus.PAUSED)
        h.server.enqueue(Reply(text="hello"))
        await h.runner.run(sid, "hi")
        info = await h.registry.info(sid)
    assert info.status is SessionStatus.ACTIVE


def test_a_failed_turn_says_its_cause_with_one_full_stop() -> None:
    text = apology(LLMConnectionError("openai: Connection error.", provider="openai"))
    assert text == (
        "Sorry, I could not answer: openai: Connection error. "
        "Your message is saved; you can send it again."
    )
