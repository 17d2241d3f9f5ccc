"""``ChatTurns``: a chat message through its session and turn to one delivered reply.

Every message goes the way production sends it: offered to the chat queue
(``SessionQueues``), recorded, and answered by ``ChatTurns.answer`` when its turn is due.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duragent.agents.spec import QueueSpec
from duragent.frontkit import ChatRef, ChatTurns, Inbound, MemoryOutbound
from duragent.frontkit.chat import NOTHING_PENDING, OTHER_CALL_PENDING
from duragent.frontkit.queue import SessionQueues
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.testing import Reply, ToolCallReply
from duragent.turns import ApprovalDecision
from tests.polling import eventually
from tests.turns.test_approval import ASK
from tests.turns.turn_fixtures import FnTool, Harness, harness

CHAT = ChatRef("telegram", "42")
DIRECT = QueueSpec()
"""What the pipeline offers a direct message with (batch: a late message joins the turn)."""


def message(text: str, message_id: str | None = None) -> Inbound:
    return Inbound(CHAT, text, agent="bot", sender_id="u1", message_id=message_id)


@dataclass
class ChatKit:
    h: Harness
    chat: ChatTurns
    queues: SessionQueues
    tasks: BackgroundTasks

    async def session(self) -> str:
        return await self.h.runner.session_for_chat("telegram", "42", "bot")

    async def send(self, text: str, message_id: str | None = None) -> str:
        """Offer a message to the chat queue (recorded when this returns); its session."""
        sid = await self.session()
        await self.queues.offer(sid, message(text, message_id), DIRECT)
        return sid

    async def settled(self) -> bool:
        """Whether every turn the queue started has ended (its reply delivered)."""
        return await eventually(lambda: len(self.tasks) == 0)


@asynccontextmanager
async def chat_kit(
    tmp_path: Path, outbound: MemoryOutbound, **options: Any
) -> AsyncIterator[ChatKit]:
    tasks = BackgroundTasks(grace_seconds=2)
    async with harness(tmp_path, **options) as h:
        chat = ChatTurns(h.runner, outbound, tasks, typing_every=0.01)
        try:
            yield ChatKit(h, chat, SessionQueues(h.runner, chat, outbound, tasks), tasks)
        finally:
            await tasks.stop()


def typing_tasks() -> list[asyncio.Task[Any]]:
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("typing-")]


async def test_a_first_message_gets_its_chat_a_session_and_one_reply(tmp_path: Path) -> None:
    outbound = MemoryOutbound()
    async with chat_kit(tmp_path, outbound) as kit:
        kit.h.server.enqueue(Reply(text="Hi, I am bot."))
        sid = await kit.send("hello", "p1")
        assert await kit.settled()
        info = await kit.h.registry.info(sid)
    assert outbound.texts(CHAT) == ["Hi, I am bot."]
    assert outbound.of_kind("text")[0].reply_to == "p1"
    assert outbound.of_kind("typing")  # shown while the model answered
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
    async with chat_kit(tmp_path, outbound, tools=[FnTool("slow", slow)]) as kit:
        kit.h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="slow", arguments={}, id="a")]),
            Reply(text="Both messages answered."),
        )
        sid = await kit.send("start", "p1")
        await started.wait()
        await kit.send("and also this", "p2")
        assert "and also this" in kit.h.runner._lines.steered(sid)
        gate.set()
        assert await kit.settled()
    assert outbound.texts() == ["Both messages answered."]
    assert outbound.of_kind("text")[0].reply_to == "p1"
    assert len(kit.h.server.requests) == 2  # the joiner got no turn (and no reply) of its own


async def test_a_redelivered_message_already_answered_sends_nothing(tmp_path: Path) -> None:
    outbound = MemoryOutbound()
    async with chat_kit(tmp_path, outbound) as kit:
        kit.h.server.enqueue(Reply(text="answered once"))
        await kit.send("hello", "p1")
        assert await kit.settled()
        await kit.send("hello", "p1")
        assert await kit.settled()
    assert outbound.texts() == ["answered once"]
    assert len(kit.h.server.requests) == 1


async def test_decisions_on_nothing_or_on_another_call_are_told_apart(tmp_path: Path) -> None:
    outbound = MemoryOutbound()
    echo = FnTool("echo", lambda a: "ran")
    call = ToolCallReply(name="echo", arguments={"x": "risky"}, id="c1")
    async with chat_kit(tmp_path, outbound, tools=[echo], policy=ASK) as kit:
        chat, sid = kit.chat, await kit.session()
        await chat.decide(CHAT, sid, "c1", ApprovalDecision.ALLOW_ONCE)
        kit.h.server.enqueue(Reply(tool_calls=[call]), Reply(text="ran it"))
        await kit.send("do it", "p1")
        assert await kit.settled()  # the turn paused on the approval it asked
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
    async with chat_kit(tmp_path, outbound) as kit:
        kit.h.server.enqueue(Reply(text="still answered"))
        await kit.send("hello")
        assert await kit.settled()
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
    async with chat_kit(tmp_path, outbound) as kit:
        kit.h.server.enqueue(Reply(text="answered", delay=0.1))
        await kit.send("hello")
        assert await kit.settled(), "the turn waits on a typing loop that never ends"
        assert typing_tasks() == []  # and typing stopped with the turn
    assert outbound.texts() == ["answered"]


async def test_a_messages_turn_runs_under_the_task_owner_and_ends_with_it(
    tmp_path: Path,
) -> None:
    """The queue's drain is the runtime's task: a turn running at shutdown is cancelled."""
    started = asyncio.Event()

    async def forever(args: Any) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    outbound = MemoryOutbound()
    async with chat_kit(tmp_path, outbound, tools=[FnTool("forever", forever)]) as kit:
        kit.h.server.enqueue(Reply(tool_calls=[ToolCallReply(name="forever", id="f1")]))
        await kit.send("hello", "p1")
        await started.wait()
        assert len(kit.tasks) == 1
        await kit.tasks.stop()
        assert len(kit.tasks) == 0
        assert typing_tasks() == []
    assert outbound.texts() == []


async def test_every_reply_a_turn_wrote_reaches_the_chat_in_order(tmp_path: Path) -> None:
    outbound = MemoryOutbound()
    async with chat_kit(tmp_path, outbound) as kit:
        kit.h.server.enqueue(Reply(text="answer A", delay=2), Reply(text="answer to both"))
        sid = await kit.send("question A", "p1")
        assert await eventually(lambda: len(kit.h.server.requests) == 1)
        await kit.send("and B", "p2")
        assert "and B" in kit.h.runner._lines.steered(sid)
        assert await kit.settled()
        info = await kit.h.registry.info(sid)
    assert outbound.texts() == ["answer A", "answer to both"]
    # the last reply, the record of its first part (the earlier reply), then its delivery
    assert info.last_delivered_seq == info.last_seq - 2
