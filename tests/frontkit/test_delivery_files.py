"""A reply's files reach its chat once, after its text, and a restart sends what a crash left."""

from __future__ import annotations

from pathlib import Path

from duragent.core.attachments import AttachmentKind
from duragent.core.events import EventType
from duragent.frontkit import ChatRef, Delivery, MemoryOutbound
from duragent.frontkit.recovery import recover_chats
from duragent.testing import Reply, ToolCallReply
from duragent.turns import Complete
from tests.frontkit.media_kit import png
from tests.frontkit.test_recovery import recovery_kit
from tests.turns.turn_fixtures import Harness, harness

CHAT = ChatRef("telegram", "42")
PHOTO = png(24, 16)


def chart_then_reply(h: Harness, text: str = "Here it is.") -> None:
    (h.agent.directory / "chart.png").write_bytes(PHOTO)
    call = ToolCallReply(
        name="send_file", arguments={"path": "chart.png", "caption": "Sales"}, id="f1"
    )
    h.server.enqueue(Reply(tool_calls=[call]), Reply(text=text))


async def test_the_text_then_the_file_are_sent_once_each_recorded_as_it_goes(
    tmp_path: Path,
) -> None:
    outbound = MemoryOutbound()
    async with harness(tmp_path, builtins=["send_file"]) as h:
        chart_then_reply(h)
        sid = await h.runner.session_for_chat("telegram", "42", "bot")
        result = await h.runner.run(sid, "chart please")
        assert isinstance(result, Complete)
        delivery = Delivery(h.runner, outbound)
        sent = await delivery.deliver(CHAT, result, reply_to="p1")
        again = await delivery.deliver(CHAT, result, reply_to="p1")
        events = await h.registry.handle(sid).events()
        info = await h.registry.info(sid)
    assert [a.kind for a in outbound.actions] == ["text", "file"]
    [file] = outbound.files(CHAT)
    assert (file.data, file.name, file.mime, file.media, file.text) == (
        PHOTO,
        "chart.png",
        "image/png",
        AttachmentKind.IMAGE,
        "Sales",
    )
    assert file.reply_to is None  # the text quoted the message already
    assert sent is not None
    assert sent.message_id == file.message_id
    assert again is None
    assert [e.data for e in events if e.type == EventType.DELIVERY] == [
        {"reply_seq": result.reply_seq, "target": "telegram:42", "parts": 1},
        {"reply_seq": result.reply_seq, "target": "telegram:42"},
    ]
    assert info.last_delivered_seq == result.reply_seq


async def test_a_reply_that_is_only_a_file_quotes_the_message_with_it(tmp_path: Path) -> None:
    outbound = MemoryOutbound()
    async with harness(tmp_path, builtins=["send_file"]) as h:
        chart_then_reply(h, text="")
        sid = await h.runner.session_for_chat("telegram", "42", "bot")
        result = await h.runner.run(sid, "chart please")
        await Delivery(h.runner, outbound).deliver(CHAT, result, reply_to="p1")
    assert [(a.kind, a.reply_to) for a in outbound.actions] == [("file", "p1")]


async def test_a_file_the_platform_refuses_is_told_in_a_line_and_the_reply_is_delivered(
    tmp_path: Path,
) -> None:
    outbound = MemoryOutbound(refuse_files=1)
    async with harness(tmp_path, builtins=["send_file"]) as h:
        chart_then_reply(h)
        sid = await h.runner.session_for_chat("telegram", "42", "bot")
        result = await h.runner.run(sid, "chart please")
        assert isinstance(result, Complete)
        await Delivery(h.runner, outbound).deliver(CHAT, result)
        info = await h.registry.info(sid)
    assert outbound.texts() == [
        "Here it is.",
        "(I could not send chart.png: the chat platform refused it.)",
    ]
    assert outbound.files() == []
    assert info.last_delivered_seq == result.reply_seq


async def test_a_reply_with_a_file_left_unsent_by_a_crash_is_sent_once_at_the_next_start(
    tmp_path: Path,
) -> None:
    async with recovery_kit(tmp_path, builtins=["send_file"]) as kit:
        chart_then_reply(kit.h)
        sid = await kit.session()
        # The turn wrote its reply, with the file; the process died before the chat got it.
        result = await kit.h.runner.run(sid, "chart please", platform_message_id="p1")
        assert isinstance(result, Complete)
        await kit.h.registry.stop(sid)
        assert await kit.recover() == (1, 0)
        assert await kit.recover() == (0, 0)
        info = await kit.h.registry.info(sid)
    assert kit.replies() == [("p1", "Here it is.")]
    [file] = kit.outbound.files()
    assert (file.data, file.text, file.media) == (PHOTO, "Sales", AttachmentKind.IMAGE)
    assert info.last_delivered_seq == result.reply_seq


async def test_a_delivered_reply_with_a_file_is_not_sent_again_after_a_restart(
    tmp_path: Path,
) -> None:
    async with recovery_kit(tmp_path, builtins=["send_file"]) as kit:
        chart_then_reply(kit.h)
        sid = await kit.session()
        result = await kit.h.runner.run(sid, "chart please", platform_message_id="p1")
        await kit.chat.delivery.deliver(CHAT, result, reply_to="p1")
        await kit.h.registry.stop(sid)
        before = len(kit.outbound.actions)
        report = await recover_chats(
            "telegram", kit.h.runner.sessions, kit.chat.delivery, kit.queues
        )
    assert report.delivered == 0
    assert len(kit.outbound.actions) == before
    assert len(kit.outbound.files()) == 1
