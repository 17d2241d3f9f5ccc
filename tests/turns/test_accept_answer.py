"""``TurnRunner.accept`` records a message at once; ``answer`` runs its turn later."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from duragent.core.events import EventType
from duragent.core.messages import ToolCall
from duragent.testing import Reply, ToolCallReply
from duragent.turns import AwaitingApproval, Complete
from tests.context.quoted_wire import spoken
from tests.polling import eventually
from tests.turns.test_approval import ASK
from tests.turns.turn_fixtures import FnTool, harness


async def test_accept_records_the_message_and_answer_runs_its_turn_without_recording_it_again(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text="hello back"))
        sid = await h.runner.start_session("bot")
        accepted = await h.runner.accept(sid, "hello", platform_message_id="p1")
        assert not h.server.requests  # no model yet
        result = await h.runner.answer(sid, accepted.seq, "hello")
        events = await h.registry.handle(sid).events()
        info = await h.registry.info(sid)
    assert isinstance(result, Complete)
    assert result.content == "hello back"
    assert [e.type for e in events].count(EventType.USER_MESSAGE) == 1
    assert h.server.last_request.json["messages"][-1] == {"role": "user", "content": "hello"}
    assert not info.awaits_answer


async def test_a_redelivered_answered_message_is_recognised(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text="hi"))
        sid = await h.runner.start_session("bot")
        await h.runner.run(sid, "hello", platform_message_id="p1")
        again = await h.runner.accept(sid, "hello", platform_message_id="p1")
    assert again.duplicate
    assert again.answered


async def test_a_message_accepted_while_a_loop_runs_is_steered_into_it(tmp_path: Path) -> None:
    gate, started = asyncio.Event(), asyncio.Event()

    async def hold(args: Any) -> str:
        started.set()
        await gate.wait()
        return "held"

    async with harness(tmp_path, tools=[FnTool("hold", hold)]) as h:
        h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="hold", id="h1")]), Reply(text="both")
        )
        sid = await h.runner.start_session("bot")
        first = await h.runner.accept(sid, "start")
        turn = asyncio.create_task(h.runner.answer(sid, first.seq, "start"))
        assert await eventually(started.is_set)
        steered = await h.runner.accept(sid, "and this")
        kept_back = await h.runner.accept(sid, "not this one", steer=False)
        gate.set()
        result = await turn
    assert steered.steered is not None
    assert steered.steered.read
    assert kept_back.steered is None
    assert isinstance(result, Complete)
    seen = spoken(h.server.last_request.json["messages"])  # the quoted task left out
    assert seen == ["start", "and this"]


async def test_answer_shows_the_model_its_message_again_after_later_replies(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text="first reply"), Reply(text="second reply"))
        sid = await h.runner.start_session("bot")
        waiting = await h.runner.accept(sid, "waited")  # arrived while the other turn ran
        await h.runner.run(sid, "other")
        result = await h.runner.answer(sid, waiting.seq, "waited")
        on_disk = await h.registry.handle(sid).events()
    assert isinstance(result, Complete)
    assert h.server.last_request.json["messages"][-1] == {"role": "user", "content": "waited"}
    users = [e.data["content"] for e in on_disk if e.type == EventType.USER_MESSAGE]
    assert users == ["waited", "other"]  # shown again, never recorded again


async def test_answer_cancels_an_approval_asked_before_the_message(tmp_path: Path) -> None:
    echo = FnTool("echo", lambda a: "ran")
    async with harness(tmp_path, tools=[echo], policy=ASK) as h:
        h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="echo", arguments={"x": "r"}, id="c1")]),
            Reply(text="never mind then"),
        )
        sid = await h.runner.start_session("bot")
        paused = await h.runner.run(sid, "run it")
        assert isinstance(paused, AwaitingApproval)
        later = await h.runner.accept(sid, "actually, don't")
        assert (await h.registry.info(sid)).awaits_answer
        result = await h.runner.answer(sid, later.seq, "actually, don't")
        info = await h.registry.info(sid)
    assert isinstance(result, Complete)
    assert info.pending_approval is None
    assert not echo.calls


async def test_answer_does_not_repeat_a_message_that_ends_the_window_after_unanswered_ones(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text="Ann said hi."))
        sid = await h.runner.start_session("bot")
        await h.runner.accept(sid, "Ann: hi all")  # a passive member: recorded, not answered
        asked = await h.runner.accept(sid, "Bob: what did Ann say?")
        await h.runner.answer(sid, asked.seq, "Bob: what did Ann say?")
    users = spoken(h.server.last_request.json["messages"])  # the quoted task left out
    assert users == ["Ann: hi all", "Bob: what did Ann say?"]


async def test_a_steered_message_the_loop_ended_without_reading_says_so(tmp_path: Path) -> None:
    gate, started = asyncio.Event(), asyncio.Event()

    async def hold(args: Any) -> str:
        started.set()
        await gate.wait()
        return "held"

    async with harness(tmp_path, tools=[FnTool("hold", hold)], max_tool_iterations=1) as h:
        h.server.enqueue(Reply(tool_calls=[ToolCallReply(name="hold", id="h1")]))
        sid = await h.runner.start_session("bot")
        first = await h.runner.accept(sid, "start")
        turn = asyncio.create_task(h.runner.answer(sid, first.seq, "start"))
        assert await eventually(started.is_set)
        late = await h.runner.accept(sid, "too late")  # after the loop's last look
        gate.set()
        result = await turn
        after = await h.runner.accept(sid, "after the turn")
    assert isinstance(result, Complete)
    assert "stopped after 1 tool steps" in result.content
    assert late.steered is not None
    assert not late.steered.read
    assert after.steered is None  # no loop runs: nothing to hand it to


async def test_a_turn_a_crash_cut_after_its_tool_result_goes_on_from_the_result(
    tmp_path: Path,
) -> None:
    """Recovery answers the message again after a kill: the model must see its call's result
    last, not the message restated after it (it would start over and call the tool again)."""
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text="noted, and done"))
        sid = await h.runner.start_session("bot")
        accepted = await h.runner.accept(sid, "remember the heron")
        session = h.registry.handle(sid)
        call = ToolCall(id="c1", name="memory", arguments='{"action": "remember"}')
        await session.add_assistant_response("", tool_calls=(call,))
        await session.add_tool_result("c1", True, "Remembered in 2026-11-24.md")
        result = await h.runner.answer(sid, accepted.seq, "remember the heron")
    assert isinstance(result, Complete)
    sent = h.server.last_request.json["messages"]
    assert [m["role"] for m in sent[-3:]] == ["user", "assistant", "tool"]
    assert sent[-1]["content"] == "Remembered in 2026-11-24.md"
