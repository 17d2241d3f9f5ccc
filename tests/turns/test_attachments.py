"""``TurnRunner.attachments``: a message's bytes kept first, then named by its event."""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.core.attachments import AttachmentKind, content_hash
from duragent.core.events import EventType
from duragent.core.payloads import UserMessageData
from duragent.testing import Reply
from duragent.turns import AttachmentNotFoundError, Complete
from tests.turns.turn_fixtures import harness


async def test_a_kept_photo_is_named_by_the_message_that_carried_it(tmp_path: Path) -> None:
    photo = b"\x89PNG not really, but bytes all the same"
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text="nice"))
        sid = await h.runner.start_session("bot")
        kept = await h.runner.attachments.keep(
            sid, photo, kind=AttachmentKind.IMAGE, mime="image/png", platform_id="f1"
        )
        accepted = await h.runner.accept(sid, "look", platform_message_id="m1", attachments=(kept,))
        result = await h.runner.answer(sid, accepted.seq, "look")
        events = await h.registry.handle(sid).events()
        again = await h.runner.attachments.read(sid, kept.sha256)
    assert isinstance(result, Complete)
    assert kept.sha256 == content_hash(photo)
    assert kept.size == len(photo)
    said = [UserMessageData.of(e.data) for e in events if e.type == EventType.USER_MESSAGE]
    assert said[0].attachments == (kept,)
    assert again == photo


async def test_keeping_the_same_bytes_twice_is_one_blob(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        sid = await h.runner.start_session("bot")
        one = await h.runner.attachments.keep(sid, b"x", kind=AttachmentKind.VOICE, mime="a/b")
        two = await h.runner.attachments.keep(sid, b"x", kind=AttachmentKind.VOICE, mime="a/b")
        assert one.sha256 == two.sha256
        assert await h.runner.attachments.has(sid, one.sha256)


async def test_reading_what_was_never_kept_names_the_missing_attachment(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        sid = await h.runner.start_session("bot")
        with pytest.raises(AttachmentNotFoundError):
            await h.runner.attachments.read(sid, "0" * 64)
