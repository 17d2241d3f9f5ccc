"""``Delivery``: each reply reaches its chat once, and the delivery is on disk."""

from __future__ import annotations

import asyncio
from pathlib import Path

from duragent.core.events import EventType
from duragent.frontkit import ChatRef, Delivery, MemoryOutbound, OutboundPort
from duragent.testing import Fault, Reply, ToolCallReply
from duragent.turns import Complete, Duplicate, Failed
from duragent.turns.result import copy_result
from tests.turns.test_approval import ASK
from tests.turns.turn_fixtures import FnTool, harness

CHAT = ChatRef("telegram", "42")


async def test_a_reply_is_sent_and_recorded_as_delivered(tmp_path: Path) -> None:
    outbound = MemoryOutbound()
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text="Hello!"))
        sid = await h.runner.session_for_chat("telegram", "42", "bot")
        result = await h.runner.run(sid, "hi")
        sent = await Delivery(h.runner, outbound).deliver(CHAT, result, reply_to="p1")
        events = await h.registry.handle(sid).events()
        info = await h.registry.info(sid)
    assert isinstance(result, Complete)
    assert outbound.texts() == ["Hello!"]
    assert outbound.actions[0].reply_to == "p1"
    assert sent is not None
    assert sent.message_id == outbound.actions[0].message_id
    delivery = events[-1]
    assert delivery.type == EventType.DELIVERY
    assert delivery.data == {"reply_seq": result.reply_seq, "target": "telegram:42"}
    assert info.last_delivered_seq == result.reply_seq


async def test_the_same_reply_handed_over_again_is_not_sent_again(tmp_path: Path) -> None:
    outbound = MemoryOutbound()
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text="once"))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "hi")
        delivery = Delivery(h.runner, outbound)
        together = await asyncio.gather(*(delivery.deliver(CHAT, result) for _ in range(5)))
        later = await delivery.deliver(CHAT, result)
    assert outbound.texts() == ["once"]
    assert sum(sent is not None for sent in together) == 1
    assert later is None


async def test_a_delivered_reply_is_not_sent_again_after_a_restart(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text="before the restart"))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "hi")
        await Delivery(h.runner, MemoryOutbound()).deliver(CHAT, result)
    outbound = MemoryOutbound()
    async with harness(tmp_path) as h2:
        assert await Delivery(h2.runner, outbound).deliver(CHAT, result) is None
    assert outbound.actions == []


async def test_a_steered_result_and_a_duplicate_send_nothing(tmp_path: Path) -> None:
    outbound = MemoryOutbound()
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text="for the first caller"))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "hi")
        delivery = Delivery(h.runner, outbound)
        steered = await delivery.deliver(CHAT, copy_result(result, steered=True))
        duplicate = await delivery.deliver(CHAT, Duplicate(session_id=sid))
        events = await h.registry.handle(sid).events()
    assert (steered, duplicate) == (None, None)
    assert outbound.actions == []
    assert EventType.DELIVERY not in [e.type for e in events]


async def test_an_approval_asks_for_a_decision_and_records_the_request_as_delivered(
    tmp_path: Path,
) -> None:
    outbound = MemoryOutbound()
    echo = FnTool("echo", lambda a: "ran")
    call = ToolCallReply(name="echo", arguments={"x": "risky"}, id="c1")
    async with harness(tmp_path, tools=[echo], policy=ASK) as h:
        h.server.enqueue(Reply(tool_calls=[call]))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "do it")
        await Delivery(h.runner, outbound).deliver(CHAT, result)
        info = await h.registry.info(sid)
        events = await h.registry.handle(sid).events()
    assert [(a.kind, a.text, a.call_id) for a in outbound.actions] == [
        ("approval", "echo:risky", "c1"),
    ]
    asked = [e.seq for e in events if e.type == EventType.APPROVAL_REQUIRED]
    assert info.last_delivered_seq == asked[-1]  # a recovery does not ask again


async def test_a_failed_turn_tells_the_chat_and_records_its_end_as_delivered(
    tmp_path: Path,
) -> None:
    outbound = MemoryOutbound()
    async with harness(tmp_path) as h:
        h.server.enqueue(Fault.unauthorized())
        sid = await h.runner.start_session("bot")
        failed = await h.runner.run(sid, "hi")
        assert isinstance(failed, Failed)
        await Delivery(h.runner, outbound).deliver(CHAT, failed)
        info = await h.registry.info(sid)
    assert outbound.texts() == [failed.content]
    assert info.last_delivered_seq == info.last_settled_seq > 0


def test_the_memory_port_is_an_outbound_port() -> None:
    port: OutboundPort = MemoryOutbound()  # mypy checks the Protocol
    assert port is not None
