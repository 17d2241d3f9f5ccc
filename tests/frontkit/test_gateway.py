"""``ChatFront`` with files: which messages' files are taken in, and how a group's read.

The memory adapter (``memory_chat``: the kit's pipeline over a real session registry, files
served from memory and counted) shows what only the pipeline decides: a file is downloaded
only for a message that will be answered, and a group's photo is labelled like its text.
"""

from __future__ import annotations

from pathlib import Path

from duragent.testing import Reply
from tests.frontkit.chat_contract_kit import ANN, BOB, GROUP, ChatSetup, said
from tests.frontkit.media_kit import sha256
from tests.frontkit.memory_chat import PHOTO, memory_chat


async def test_a_group_photo_without_a_caption_is_recorded_labelled_with_its_sender(
    tmp_path: Path,
) -> None:
    async with memory_chat(tmp_path, ChatSetup(access={"groups": {"policy": "open"}})) as chat:
        chat.llm.enqueue(Reply(text="Nice."))
        await chat.message(said(GROUP, None, ANN, kind="photo", mention=True))
        await chat.settle()
        assert chat.texts(GROUP) == ["Nice."]
        sid = await chat.registry.chat_session((GROUP.gateway, GROUP.chat_id, "bot"))
        assert sid is not None
        events = await chat.registry.handle(sid).events()
    [recorded] = [e.data for e in events if e.type == "user_message"]
    assert recorded["content"] == "Ann:"
    assert [a["sha256"] for a in recorded["attachments"]] == [sha256(PHOTO)]


async def test_a_photo_nobody_answers_is_not_downloaded_and_kept_as_a_named_caption(
    tmp_path: Path,
) -> None:
    async with memory_chat(tmp_path, ChatSetup(access={"groups": {"policy": "open"}})) as chat:
        await chat.message(said(GROUP, "from the trip", ANN, kind="photo"))  # not addressed
        await chat.message(said(GROUP, None, BOB, kind="photo"))  # no caption either
        await chat.settle()
        assert chat.files.fetched == []
        assert chat.llm.requests == []
        sid = await chat.registry.chat_session((GROUP.gateway, GROUP.chat_id, "bot"))
        assert sid is not None
        silent = await chat.runner.sessions.recent_silent(sid, 10, 24.0)
    assert silent == ["Ann: [photo, not downloaded] from the trip", "bob: [photo, not downloaded]"]


async def test_a_photo_the_next_mention_follows_is_named_to_the_model_as_not_seen(
    tmp_path: Path,
) -> None:
    async with memory_chat(tmp_path, ChatSetup(access={"groups": {"policy": "open"}})) as chat:
        chat.llm.enqueue(Reply(text="I did not see it."))
        await chat.message(said(GROUP, None, BOB, kind="photo"))
        await chat.message(said(GROUP, "@duragent_bot what is in the photo?", ANN, mention=True))
        await chat.settle()
        assert chat.files.fetched == []
        assert chat.texts(GROUP) == ["I did not see it."]
    assert "bob: [photo, not downloaded]" in str(chat.llm.requests[-1].json["messages"])


async def test_a_captionless_photo_replying_to_the_bot_is_downloaded_and_answered(
    tmp_path: Path,
) -> None:
    async with memory_chat(tmp_path, ChatSetup(access={"groups": {"policy": "open"}})) as chat:
        chat.llm.enqueue(Reply(text="A photo."))
        await chat.message(said(GROUP, None, ANN, kind="photo", reply_to_bot=True))
        await chat.settle()
        assert chat.texts(GROUP) == ["A photo."]
        assert chat.files.fetched == ["photo"]
