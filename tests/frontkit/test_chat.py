"""``ChatTurns``: a chat message through its session and turn to one delivered reply."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from duragent.frontkit import ChatRef, ChatTurns, Inbound, MemoryOutbound
from duragent.frontkit.chat import NOTHING_PENDING, OTHER_CALL_PENDING
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.testing import Reply, ToolCallReply
from duragent.turns import ApprovalDecision
from tests.polling import eventually
from tests.turns.test_approval import ASK
from tests.turns.turn_fixtures import FnTool, Harness, harness

CHAT = ChatRef("telegram", "42")


def message(text: str, message_id: str | None = None) -> Inbound:
    return Inbound(CHAT, text, agent="bot", sender_id="u1", message_id=message_id)


@asynccontextmanager
async def chat_kit(
    tmp_path: Path, outbound: MemoryOutbound, **options: Any
) -> AsyncIterator[tuple[Harness, ChatTurns, BackgroundTasks]]:
    tasks = BackgroundTasks(grace_seconds=2)
    async with harness(tmp_path, **options) as h:
        try:
            yield h, ChatTurns(h.runner, outbound, tasks, typing_every=0.01), tasks
        finally:
            await tasks.stop()


async def test_a_first_message_gets_its_chat_a_session_and_one_reply(tmp_path: Path) -> None:
    outbound = MemoryOutbound()
    async with chat_kit(tmp_path, outbound) as (h, chat, _):
        h.server.enqueue(Reply(text="Hi, I am bot."))
        sent = await chat.receive(message("hello", "p1"))
        sid = await h.runner.session_for_chat("telegram", "42", "bot")
        info = await h.registry.info(sid)
    assert outbound.texts(CHAT) == ["Hi, I am bot."]
    assert outbound.of_kind("text")[0].reply_to == "p1"
    assert outbound.of_kind("typing")  # shown while the model answered
    assert sent is not None
    assert info.last_delivered_seq > 0


async def test_a_message_that_joins_a_running_turn_does_not_send_the_reply_twice(
    tmp_path: Path,
) -> None:
    gate = asyncio.Event()
    started = asyncio.Event()

    async def slow(args: Any) -> str:
        started.set()
        await gate.wait()
        return "slow done"

    outbound = MemoryOutbound()
    async with chat_kit(tmp_path, outbound, tools=[FnTool("slow", slow)]) as (h, chat, _):
        h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="slow", arguments={}, id="a")]),
            Reply(text="Both messages answered."),
        )
        first = asyncio.create_task(chat.receive(message("start", "p1")))
        await started.wait()
        second = asyncio.create_task(chat.receive(message("and also this", "p2")))
        sid = await h.runner.session_for_chat("telegram", "42", "bot")
        assert await eventually(lambda: "and also this" in h.runner._lines.steered(sid))
        gate.set()
        one, two = await asyncio.gather(first, second)
    assert outbound.texts() == ["Both messages answered."]
    assert one is not None
    assert two is None


async def test_a_redelivered_message_already_answered_sends_nothing(tmp_path: Path) -> None:
    outbound = MemoryOutbound()
    async with chat_kit(tmp_path, outbound) as (h, chat, _):
        h.server.enqueue(Reply(text="answered once"))
        await chat.receive(message("hello", "p1"))
        again = await chat.receive(message("hello", "p1"))
    assert again is None
    assert outbound.texts() == ["answered once"]
    assert len(h.server.requests) == 1


async def test_decisions_on_nothing_or_on_another_call_are_told_apart(tmp_path: Path) -> None:
    outbound = MemoryOutbound()
    echo = FnTool("echo", lambda a: "ran")
    call = ToolCallReply(name="echo", arguments={"x": "risky"}, id="c1")
    async with chat_kit(tmp_path, outbound, tools=[echo], policy=ASK) as (h, chat, _):
        sid = await h.runner.session_for_chat("telegram", "42", "bot")
        await chat.decide(CHAT, sid, "c1", ApprovalDecision.ALLOW_ONCE)
        h.server.enqueue(Reply(tool_calls=[call]), Reply(text="ran it"))
        await chat.receive(message("do it", "p1"))
        await chat.decide(CHAT, sid, "zz", ApprovalDecision.ALLOW_ONCE)
        await chat.decide(CHAT, sid, "c1", ApprovalDecision.ALLOW_ONCE)
    said = [(a.kind, a.text) for a in outbound.actions if a.kind != "typing"]
    assert said == [
        ("text", NOTHING_PENDING),
        ("approval", "echo:risky"),
        ("text", OTHER_CALL_PENDING),
        ("text", "ran it"),
    ]
    assert echo.calls == [{"x": "risky"}]


async def test_a_refused_typing_indicator_does_not_end_the_turn(tmp_path: Path) -> None:
    outbound = MemoryOutbound(fail_typing=True)
    async with chat_kit(tmp_path, outbound) as (h, chat, _):
        h.server.enqueue(Reply(text="still answered"))
        await chat.receive(message("hello"))
    assert outbound.texts() == ["still answered"]


class CancelSwallowingOutbound(MemoryOutbound):
    """A port whose "typing…" send swallows a cancellation (as ``asyncio.wait_for`` can on
    Python 3.11 when the cancel lands as the awaited send completes)."""

    async def send_typing(self, chat: ChatRef) -> None:
        await super().send_typing(chat)
        with contextlib.suppress(asyncio.CancelledError):  # swallowed
            await asyncio.sleep(0.05)


async def test_a_port_that_swallows_the_typing_cancellation_does_not_hold_the_turn(
    tmp_path: Path,
) -> None:
    outbound = CancelSwallowingOutbound()
    async with chat_kit(tmp_path, outbound) as (h, chat, _):
        h.server.enqueue(Reply(text="answered", delay=0.1))
        turn = asyncio.create_task(chat.receive(message("hello")))
        await asyncio.wait({turn}, timeout=5)  # a bound for a hang, not a timing
        assert turn.done(), "the turn waits on a typing loop that never ends"
        typed = len(outbound.of_kind("typing"))
        await asyncio.sleep(0.2)
        assert len(outbound.of_kind("typing")) == typed  # and typing stopped with the turn
    assert turn.result() is not None
    assert outbound.texts() == ["answered"]


async def test_a_submitted_message_runs_under_the_task_owner(tmp_path: Path) -> None:
    outbound = MemoryOutbound()
    async with chat_kit(tmp_path, outbound) as (h, chat, tasks):
        h.server.enqueue(Reply(text="from the background", delay=0.2))
        task = chat.submit(message("hello"))
        assert len(tasks) == 1
        sent = await task
    assert sent is not None
    assert outbound.texts() == ["from the background"]


async def test_every_reply_a_turn_wrote_reaches_the_chat_in_order(tmp_path: Path) -> None:
    outbound = MemoryOutbound()
    async with chat_kit(tmp_path, outbound) as (h, chat, _):
        h.server.enqueue(Reply(text="answer A", delay=2), Reply(text="answer to both"))
        first = asyncio.create_task(chat.receive(message("question A", "p1")))
        assert await eventually(lambda: len(h.server.requests) == 1)
        second = asyncio.create_task(chat.receive(message("and B", "p2")))
        sid = await h.runner.session_for_chat("telegram", "42", "bot")
        assert await eventually(lambda: "and B" in h.runner._lines.steered(sid))
        await asyncio.gather(first, second)
        info = await h.registry.info(sid)
    assert outbound.texts() == ["answer A", "answer to both"]
    assert info.last_delivered_seq == info.last_seq - 1  # the last reply, then its delivery
