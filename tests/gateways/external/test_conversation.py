"""Conversations through an external gateway: what only the plugin protocol adds to the kit.

Confirmations (a refused reply stays undelivered and is sent again after a restart; a
gateway that never confirms still works), a reply written while the child restarts, typing
by capability, fatal errors, logins, floods and garbage on the way in.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from duragent.frontkit import ChatRef
from duragent.frontkit.outbox import UNDELIVERED
from duragent.frontkit.queue import TURN_FAILED
from duragent.testing import Reply
from duragent.testing.gateway_control import message
from tests.frontkit.chat_contract_kit import DM, GATEWAY, ChatSetup, said
from tests.gateways.external.external_chat import FAST, ExternalChat, external_chat
from tests.polling import eventually


async def delivered_seq(driver: ExternalChat, chat: ChatRef) -> int:
    sid = await driver.registry.chat_session((GATEWAY, chat.chat_id, "bot"))
    assert sid is not None
    return (await driver.registry.handle(sid).info()).last_delivered_seq


async def test_a_reply_goes_out_as_send_message_answering_the_message(tmp_path: Path) -> None:
    async with external_chat(tmp_path, ChatSetup()) as chat:
        chat.llm.enqueue(Reply(text="Hello **Ann**."))
        msg = said(DM, "hi")
        await chat.message(msg)
        sent = await chat.child.command("send_message")
        await chat.settle()
    assert sent["chat_id"] == DM.chat_id
    assert sent["content"] == "Hello **Ann**."  # Markdown: the gateway formats for its platform
    assert sent["reply_to"] == msg.message_id
    assert isinstance(sent["request_id"], str)
    assert sent["request_id"]
    typing = chat.child.of_type("send_typing")
    assert typing
    assert typing[0] == {"type": "send_typing", "chat_id": DM.chat_id, "duration": 5}


async def test_a_refused_reply_stays_undelivered_and_is_sent_again_after_a_restart(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with external_chat(tmp_path, ChatSetup()) as chat:
        chat.llm.enqueue(Reply(text="the answer"))
        await chat.child.refuse("chat_not_found", "no such chat")
        await chat.message(said(DM, "question"))
        await chat.settle()
        # asked once and refused; the person is told it was not delivered (it is kept on
        # disk), not apologised to as if the turn had failed
        assert chat.texts(DM) == ["the answer", UNDELIVERED]
        assert await delivered_seq(chat, DM) == 0
        await chat.restart()
        await chat.child.command("send_message")
        await chat.settle()
        assert chat.texts(DM) == ["the answer", UNDELIVERED, "the answer"]
        assert await delivered_seq(chat, DM) > 0
    assert TURN_FAILED not in chat.texts(DM)
    assert any(
        "refused send_message: chat_not_found: no such chat" in r.getMessage()
        for r in caplog.records
    )


async def test_a_reply_the_gateway_rate_limits_is_sent_again_and_delivered_without_an_apology(
    tmp_path: Path,
) -> None:
    async with external_chat(tmp_path, ChatSetup()) as chat:
        chat.llm.enqueue(Reply(text="the answer"))
        await chat.child.refuse("rate_limited", "slow down")
        await chat.message(said(DM, "question"))
        assert await eventually(lambda: len(chat.texts(DM)) == 2)
        await chat.settle()
        assert await delivered_seq(chat, DM) > 0
        # refused once, then the same command (same request_id) taken: delivered once
        sends = chat.child.of_type("send_message")
    assert [c["content"] for c in sends] == ["the answer", "the answer"]
    assert sends[0]["request_id"] == sends[1]["request_id"]


async def test_a_gateway_that_never_confirms_still_gets_every_reply(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    timings = FAST.__class__(initial_backoff=0.01, ack_timeout=0.2)
    async with external_chat(tmp_path, ChatSetup(), "--no-ack", timings=timings) as chat:
        chat.llm.enqueue(Reply(text="one"), Reply(text="two"))
        await chat.message(said(DM, "first"))
        await chat.settle()
        await chat.message(said(DM, "second"))
        await chat.settle()
        assert chat.texts(DM) == ["one", "two"]
        assert await delivered_seq(chat, DM) > 0
    warned = [
        r.getMessage() for r in caplog.records if "does not answer commands" in r.getMessage()
    ]
    assert len(warned) == 1, warned


async def test_a_reply_written_while_the_gateway_restarts_reaches_the_new_child(
    tmp_path: Path,
) -> None:
    async with external_chat(tmp_path, ChatSetup()) as chat:
        first = chat.child
        chat.llm.enqueue(Reply(text="worth the wait", delay=0.5))
        await chat.message(said(DM, "slow question"))
        await first.exit(1)  # the gateway crashes while the model thinks
        second = await chat.control.child(1)
        sent = await second.command("send_message")
        await chat.settle()
    assert sent["content"] == "worth the wait"
    assert first.of_type("send_message") == []
    assert chat.texts(DM) == ["worth the wait"]


async def test_a_reply_the_child_died_holding_is_sent_again_to_the_next_child(
    tmp_path: Path,
) -> None:
    async with external_chat(tmp_path, ChatSetup()) as chat:
        first = chat.child
        await first.hold()
        chat.llm.enqueue(Reply(text="once more"))
        await chat.message(said(DM, "question"))
        held = await first.command("send_message")
        await first.exit(1)  # it took the line and died without answering
        second = await chat.control.child(1)
        again = await second.command("send_message")
        await chat.settle()
        assert again == held  # the same command, the same request id
        assert await delivered_seq(chat, DM) > 0


async def test_a_gateway_that_never_says_ready_is_taken_as_ready_by_its_first_message(
    tmp_path: Path,
) -> None:
    async with external_chat(tmp_path, ChatSetup(), "--no-ready") as chat:
        assert chat.gateway.state == "starting"
        chat.llm.enqueue(Reply(text="hello anyway"))
        await chat.message(said(DM, "hi"))
        sent = await chat.child.command("send_message")
        await chat.settle()
        assert sent["content"] == "hello anyway"
        assert chat.gateway.state == "running"


@pytest.mark.parametrize(("capabilities", "typing"), [("typing", True), ("media,edit", False)])
async def test_typing_is_sent_only_to_a_gateway_that_can_show_it(
    tmp_path: Path, capabilities: str, typing: bool
) -> None:
    async with external_chat(tmp_path, ChatSetup(), "--capabilities", capabilities) as chat:
        chat.llm.enqueue(Reply(text="ok"))
        await chat.message(said(DM, "hi"))
        await chat.child.command("send_message")
        await chat.settle()
        assert bool(chat.child.of_type("send_typing")) is typing


@pytest.mark.parametrize(("capabilities", "acked"), [("typing,ack", True), ("typing", False)])
async def test_a_gateway_that_asks_for_acks_is_told_each_message_once_it_is_recorded(
    tmp_path: Path, capabilities: str, acked: bool
) -> None:
    async with external_chat(tmp_path, ChatSetup(), "--capabilities", capabilities) as chat:
        chat.llm.enqueue(Reply(text="ok"))
        msg = said(DM, "hi")
        await chat.message(msg)
        await chat.child.command("send_message")
        await chat.settle()
        acks = chat.child.of_type("ack_message")
        if not acked:  # a gateway written for the reference never sees the command
            assert acks == []
            return
        assert acks == [
            {"type": "ack_message", "message_id": msg.message_id, "chat_id": DM.chat_id}
        ]
        sid = await chat.registry.chat_session((GATEWAY, DM.chat_id, "bot"))
        assert sid is not None
        messages = await chat.registry.handle(sid).messages()
        assert any(m.content == "hi" for m in messages)  # recorded before it was acknowledged


async def test_a_fatal_error_stops_the_gateway_and_says_why(tmp_path: Path) -> None:
    async with external_chat(tmp_path, ChatSetup()) as chat:
        await chat.child.emit(
            {"type": "error", "code": "unauthorized", "message": "token revoked", "fatal": True}
        )
        assert await eventually(chat.child.closed.is_set)
        assert chat.gateway.state == "failed: unauthorized: token revoked"
        await chat.settle()
        assert len(chat.control.children) == 1  # not restarted


async def test_a_gateway_that_needs_a_login_says_what_to_do_until_it_is_done(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with external_chat(tmp_path, ChatSetup()) as chat:
        method = {"method": "pair_code", "code": "ABCD-1234", "expires_in": 60}
        await chat.child.emit({"type": "auth_required", "method": method})
        assert await eventually(lambda: chat.gateway.state.startswith("waiting for login"))
        assert chat.gateway.state == "waiting for login: enter the pair code ABCD-1234 within 60 s"
        await chat.child.emit({"type": "auth_success"})
        assert await eventually(lambda: chat.gateway.state == "running")
    assert any(
        "ABCD-1234" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
    )


async def test_an_unknown_event_type_is_ignored(tmp_path: Path) -> None:
    async with external_chat(tmp_path, ChatSetup()) as chat:
        await chat.child.emit({"type": "presence_changed", "user": "42"})
        chat.llm.enqueue(Reply(text="still here"))
        await chat.message(said(DM, "hi"))
        await chat.child.command("send_message")
        assert chat.gateway.state == "running"


async def test_a_flood_of_messages_is_recorded_and_every_chat_answered(tmp_path: Path) -> None:
    count, chats = 300, 30
    flood = ("--mode", "flood", "--count", str(count), "--chats", str(chats))
    async with external_chat(
        tmp_path, ChatSetup(), *flood, responder=lambda request: Reply(text="noted")
    ) as chat:
        assert await eventually(lambda: chat.gateway.handled == count, within=60)
        await chat.settle()
        recorded = 0
        for n in range(chats):
            ref = ChatRef(GATEWAY, str(5000 + n))
            assert chat.texts(ref), f"chat {ref.chat_id} was never answered"
            sid = await chat.registry.chat_session((GATEWAY, ref.chat_id, "bot"))
            assert sid is not None
            events = await chat.registry.handle(sid).events()
            recorded += sum(1 for e in events if e.type == "user_message")
        assert recorded == count
        assert len(chat.control.children) == 1


async def test_garbage_on_the_way_in_does_not_stop_the_next_message(tmp_path: Path) -> None:
    async with external_chat(tmp_path, ChatSetup(), "--mode", "garbage") as chat:
        chat.llm.enqueue(Reply(text="I read you"))
        sent = await chat.child.command("send_message")
        await chat.settle()
    assert sent["chat_id"] == "7001"
    assert sent["reply_to"] == "g-after"


async def test_a_group_message_in_a_thread_keeps_its_thread_and_sender(tmp_path: Path) -> None:
    setup = ChatSetup(access={"groups": {"activation": "always"}})
    async with external_chat(tmp_path, setup) as chat:
        chat.llm.enqueue(Reply(text="hi all"))
        event = message("-77", "hello", message_id="t1", sender_id="9", chat_type="Group")
        event["sender"] = {"id": "9", "display_name": "Nia"}
        event["routing"]["thread_id"] = "12"
        await chat.emit(event)
        await chat.child.command("send_message")
        await chat.settle()
        prompt = chat.llm.requests[-1].json["messages"]
    assert prompt[-1]["content"] == "Nia: hello"
