"""A reply reaches its chat part by part, and one handed over again sends only what is left.

A reply's parts are its texts' messages (a long text as the port splits it), then its files.
``Delivery`` records each part but the last as it goes; a reply handed over again (a gateway
retrying, a restart's recovery) skips the parts recorded already, so a failure or a crash
between two parts never sends the first again. The ports are in memory (``text_limit``: a
platform that splits long texts); the sessions are real.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.core.attachments import Attachment, AttachmentKind
from duragent.core.events import EventType
from duragent.frontkit import ChatRef, Delivery, MemoryOutbound, OutgoingFile, SentMessage
from duragent.frontkit.outbound import metered
from duragent.frontkit.outbox import UndeliveredError
from duragent.frontkit.preview_store import PreviewStore
from duragent.frontkit.recovery import recover_chats
from duragent.frontkit.reply_parts import DeliveredMark, TextPiece, reply_parts
from duragent.observability.metrics import Metrics
from duragent.testing import Reply
from duragent.tools.send_file import ReplyFile
from duragent.turns import Complete
from tests.frontkit.test_delivery_files import CHAT, PHOTO, chart_then_reply
from tests.frontkit.test_preview import port_of, previews
from tests.frontkit.test_recovery import recovery_kit
from tests.polling import eventually
from tests.turns.turn_fixtures import harness


class GivesUp(MemoryOutbound):
    """A port whose outbox gives up on the first ``files`` files and the ``text``-th text."""

    def __init__(self, *, files: int = 0, text: int = 0, text_limit: int | None = None) -> None:
        super().__init__(text_limit=text_limit)
        self.files_to_give_up = files
        self.text_to_give_up = text
        self.texts_tried = 0

    async def send_text(
        self, chat: ChatRef, text: str, *, reply_to: str | None = None
    ) -> SentMessage:
        self.texts_tried += 1
        if self.texts_tried == self.text_to_give_up:
            raise UndeliveredError("the outbox gave up on a text", told=True)
        return await super().send_text(chat, text, reply_to=reply_to)

    async def send_file(
        self, chat: ChatRef, file: OutgoingFile, *, reply_to: str | None = None
    ) -> SentMessage:
        if self.files_to_give_up > 0:
            self.files_to_give_up -= 1
            raise UndeliveredError("the outbox gave up on a file", told=True)
        return await super().send_file(chat, file, reply_to=reply_to)


def a_file(name: str) -> ReplyFile:
    return ReplyFile(
        Attachment(kind=AttachmentKind.DOCUMENT, mime="text/plain", size=1, sha256=name * 64)
    )


def test_the_parts_are_the_texts_not_blank_then_the_files_in_order() -> None:
    first, second = a_file("a"), a_file("b")
    pieces = MemoryOutbound().pieces
    assert reply_parts(("one", "  ", "two"), (first, second), pieces) == (
        TextPiece("one", first=True),
        TextPiece("two", first=True),
        first,
        second,
    )
    assert reply_parts(("",), (), pieces) == ()


def test_a_long_text_is_a_part_per_message_the_port_splits_it_into() -> None:
    pieces = MemoryOutbound(text_limit=4).pieces
    assert reply_parts(("abcdefghij", "xy"), (), pieces) == (
        TextPiece("abcd", first=True),
        TextPiece("efgh", first=False),
        TextPiece("ij", first=False),
        TextPiece("xy", first=True),
    )
    assert reply_parts(("abcdefghij",), (), pieces) == reply_parts(("abcdefghij",), (), pieces)


def test_a_counted_port_splits_texts_as_the_port_it_counts() -> None:
    port = metered(MemoryOutbound(text_limit=4), "telegram", Metrics())
    assert port.pieces("abcdefghij") == ("abcd", "efgh", "ij")


def test_a_mark_counts_the_parts_of_the_reply_part_way_and_none_of_one_delivered() -> None:
    mark = DeliveredMark(seq=5).part(9, 1)
    assert (mark.parts_of(5), mark.parts_of(9), mark.parts_of(12)) == (None, 1, 0)
    assert mark.part(9, 1) == mark  # an equal part again changes nothing
    assert mark.part(7, 3) == mark  # nor a part of an older reply
    assert mark.whole(9) == DeliveredMark(seq=9)


async def test_a_file_given_up_on_is_sent_alone_when_the_reply_is_handed_over_again(
    tmp_path: Path,
) -> None:
    outbound = GivesUp(files=1)
    async with harness(tmp_path, builtins=["send_file"]) as h:
        chart_then_reply(h)
        sid = await h.runner.session_for_chat("telegram", "42", "bot")
        result = await h.runner.run(sid, "chart please")
        assert isinstance(result, Complete)
        assert result.reply_seq is not None
        delivery = Delivery(h.runner, outbound)
        with pytest.raises(UndeliveredError):
            await delivery.deliver(CHAT, result, reply_to="p1")
        part_way = await h.registry.info(sid)
        await delivery.deliver(CHAT, result, reply_to="p1")
        info = await h.registry.info(sid)
        events = await h.registry.handle(sid).events()
    assert outbound.texts() == ["Here it is."]
    [file] = outbound.files()
    assert (file.data, file.text) == (PHOTO, "Sales")
    assert part_way.parts_delivered(result.reply_seq) == 1
    assert info.parts_delivered(result.reply_seq) is None
    assert [e.data.get("parts") for e in events if e.type == EventType.DELIVERY] == [1, None]


async def test_after_a_restart_only_the_parts_not_recorded_are_sent(tmp_path: Path) -> None:
    async with recovery_kit(tmp_path, builtins=["send_file"]) as kit:
        chart_then_reply(kit.h)
        sid = await kit.session()
        result = await kit.h.runner.run(sid, "chart please", platform_message_id="p1")
        assert isinstance(result, Complete)
        before = GivesUp(files=1)
        with pytest.raises(UndeliveredError):
            await Delivery(kit.h.runner, before).deliver(CHAT, result, reply_to="p1")
        await kit.h.registry.stop(sid)  # as after a restart: a new process, nothing live
        assert await kit.recover() == (1, 0)
        assert await kit.recover() == (0, 0)
        info = await kit.h.registry.info(sid)
    assert before.texts() == ["Here it is."]
    assert kit.outbound.texts() == []  # the text is not sent again
    [file] = kit.outbound.files()
    assert (file.data, file.reply_to) == (PHOTO, None)
    assert info.last_delivered_seq == result.reply_seq


async def test_a_reply_of_several_texts_sends_after_a_restart_only_those_not_recorded(
    tmp_path: Path,
) -> None:
    async with recovery_kit(tmp_path) as kit:
        sid = await kit.session()
        # Two replies nobody delivered: a recovery sends them as one reply of two parts.
        await kit.h.runner.run(sid, "one", platform_message_id="p1")
        await kit.h.runner.run(sid, "two", platform_message_id="p2")
        await kit.h.registry.stop(sid)
        first = GivesUp(text=2)  # the second text is given up on
        sessions = kit.h.runner.sessions
        report = await recover_chats(
            "telegram", sessions, Delivery(kit.h.runner, first), kit.queues
        )
        assert (report.delivered, report.failed) == (0, 1)
        await kit.h.registry.stop(sid)  # a restart: a new process
        assert await kit.recover() == (1, 0)
        assert await kit.recover() == (0, 0)
    assert first.texts() == ["re: one"]
    assert kit.outbound.texts() == ["re: two"]


async def test_a_reply_of_one_part_writes_one_delivery_record_as_before(tmp_path: Path) -> None:
    outbound = MemoryOutbound()
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text="hello"))
        sid = await h.runner.session_for_chat("telegram", "42", "bot")
        result = await h.runner.run(sid, "hi")
        assert isinstance(result, Complete)
        await Delivery(h.runner, outbound).deliver(CHAT, result, reply_to="p1")
        events = await h.registry.handle(sid).events()
    assert [e.data for e in events if e.type == EventType.DELIVERY] == [
        {"reply_seq": result.reply_seq, "target": "telegram:42"}
    ]


async def test_the_text_in_a_previews_place_is_not_sent_again_when_its_file_is(
    tmp_path: Path,
) -> None:
    kit = previews(tmp_path / "previews")
    port = port_of(kit)
    outbound = GivesUp(files=1)
    async with harness(tmp_path, builtins=["send_file"]) as h:
        chart_then_reply(h)
        sid = await h.runner.session_for_chat("telegram", "42", "bot")
        result = await h.runner.run(sid, "chart please")
        stream = kit.stream(CHAT, sid, "p1")
        await stream.opened("bot", "pause")
        await stream.token("Here")  # the second piece of a reply still written opens it
        await stream.token(" it")
        assert await eventually(lambda: bool(port.did("send")))
        delivery = Delivery(h.runner, outbound)
        with pytest.raises(UndeliveredError):
            await delivery.deliver(CHAT, result, reply_to="p1", stream=stream)
        recorded = PreviewStore(tmp_path / "previews" / "previews").load(CHAT.gateway)
        await delivery.deliver(CHAT, result, reply_to="p1")
    assert port.did("finish") == [("finish", "1", "Here it is.")]
    assert port.did("delete") == []
    assert port.texts == {"1": "Here it is."}
    assert recorded == []  # forgotten before the text's part was recorded
    assert outbound.texts() == []  # the text went in the preview's place, once
    assert len(outbound.files()) == 1


LONG = "re: 123456789012345678"
"""The echo's reply to ``LONG[4:]``: three messages of at most ``LIMIT`` characters."""
LIMIT = 8
PIECES = ["re: 1234", "56789012", "345678"]


async def test_the_third_message_of_a_long_text_given_up_on_is_sent_alone_when_handed_over_again(
    tmp_path: Path,
) -> None:
    outbound = GivesUp(text=3, text_limit=LIMIT)
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text=LONG))
        sid = await h.runner.session_for_chat("telegram", "42", "bot")
        result = await h.runner.run(sid, "hi")
        assert isinstance(result, Complete)
        assert result.reply_seq is not None
        delivery = Delivery(h.runner, outbound)
        with pytest.raises(UndeliveredError):
            await delivery.deliver(CHAT, result, reply_to="p1")
        part_way = await h.registry.info(sid)
        await delivery.deliver(CHAT, result, reply_to="p1")
        events = await h.registry.handle(sid).events()
    assert outbound.texts() == PIECES
    assert [a.reply_to for a in outbound.of_kind("text")] == ["p1", None, None]
    assert part_way.parts_delivered(result.reply_seq) == 2
    assert [e.data.get("parts") for e in events if e.type == EventType.DELIVERY] == [1, 2, None]


async def test_after_a_restart_only_the_messages_of_a_long_text_not_recorded_are_sent(
    tmp_path: Path,
) -> None:
    async with recovery_kit(tmp_path) as kit:
        sid = await kit.session()
        await kit.h.runner.run(sid, LONG.removeprefix("re: "), platform_message_id="p1")
        await kit.h.registry.stop(sid)
        first = GivesUp(text=3, text_limit=LIMIT)
        sessions = kit.h.runner.sessions
        report = await recover_chats(
            "telegram", sessions, Delivery(kit.h.runner, first), kit.queues
        )
        assert (report.delivered, report.failed) == (0, 1)
        await kit.h.registry.stop(sid)  # a restart: a new process
        kit.outbound.text_limit = LIMIT
        assert await kit.recover() == (1, 0)
        assert await kit.recover() == (0, 0)
        info = await kit.h.registry.info(sid)
    assert [(a.reply_to, a.text) for a in first.of_kind("text")] == [
        ("p1", PIECES[0]),
        (None, PIECES[1]),
    ]
    assert kit.replies() == [(None, PIECES[2])]  # only the first message quotes
    assert info.last_delivered_seq is not None
    assert info.parts_delivered(info.last_delivered_seq) is None


async def test_the_first_message_of_a_long_text_takes_the_previews_place_and_is_not_sent_again(
    tmp_path: Path,
) -> None:
    kit = previews(tmp_path / "previews")
    port = port_of(kit)
    outbound = GivesUp(text=2, text_limit=LIMIT)  # the second send: the text's third message
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text=LONG))
        sid = await h.runner.session_for_chat("telegram", "42", "bot")
        result = await h.runner.run(sid, "hi")
        stream = kit.stream(CHAT, sid, "p1")
        await stream.opened("bot", "pause")
        await stream.token("re:")  # the second piece of a reply still written opens it
        await stream.token(" 12")
        assert await eventually(lambda: bool(port.did("send")))
        delivery = Delivery(h.runner, outbound)
        with pytest.raises(UndeliveredError):
            await delivery.deliver(CHAT, result, reply_to="p1", stream=stream)
        await delivery.deliver(CHAT, result, reply_to="p1")
    assert port.did("finish") == [("finish", "1", PIECES[0])]  # its first message alone
    assert port.texts == {"1": PIECES[0]}
    assert outbound.texts() == PIECES[1:]
    assert [a.reply_to for a in outbound.of_kind("text")] == [None, None]
