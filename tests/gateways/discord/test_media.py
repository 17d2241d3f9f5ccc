"""Attachments through Discord: photos, voice messages, documents and files over the limit.

The real gateway against the fake Discord, whose CDN serves each attachment from a signed
link and counts its downloads; the tests read what the workspace holds afterwards.
"""

from __future__ import annotations

import json
from pathlib import Path

from duragent.frontkit import MediaLimits, MediaSettings
from duragent.llm.transcription import TranscriptionSettings, transcriber_for
from duragent.testing import Reply, ScriptedLLMServer
from duragent.testing.discord_objects import Person
from tests.frontkit.chat_contract_kit import ChatSetup
from tests.frontkit.media_kit import blob, chat_files, png, sha256, stored_messages
from tests.gateways.discord.discord_chat import discord_chat
from tests.polling import eventually

ANN = Person(1001, "ann", global_name="Ann")
DM = 1001
PHOTO = png(80, 60)
VOICE = b"OggS\x00\x02 a voice message"


def transcribing(llm: ScriptedLLMServer) -> MediaSettings:
    """Voice transcribed by the scripted server's ``/v1/audio/transcriptions``."""
    settings = TranscriptionSettings(base_url=llm.openai_base_url, model="whisper-1")
    return MediaSettings(transcriber=transcriber_for(settings))


def small_videos(llm: ScriptedLLMServer) -> MediaSettings:
    return MediaSettings(limits=MediaLimits(video=1024))


async def test_an_attached_photo_is_kept_and_named_by_its_message(tmp_path: Path) -> None:
    workspace = tmp_path / ".duragent"
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        chat.llm.enqueue(Reply(text="A red square."))
        photo = chat.dc.attachment(PHOTO, "square.png")
        await chat.push(DM, "what is this?", ANN, attachments=[photo])
        await chat.settle()
        assert [m["content"] for m in chat.dc.sent(DM)] == ["A red square."]
        assert chat.dc.attachment_downloads(photo["id"]) == 1
        asked = json.dumps(chat.llm.requests[-1].json["messages"][-1])
    assert "what is this?" in asked
    [stored] = stored_messages(workspace)
    assert stored.content == "what is this?"
    assert stored.attachments == [
        {
            "kind": "image",
            "mime": "image/png",
            "size": len(PHOTO),
            "sha256": sha256(PHOTO),
            "name": "square.png",
            "platform_id": photo["id"],
            "width": 80,
            "height": 60,
        }
    ]
    assert blob(workspace, stored.session_id, sha256(PHOTO)) == PHOTO


async def test_a_voice_message_becomes_its_transcript(tmp_path: Path) -> None:
    workspace = tmp_path / ".duragent"
    async with discord_chat(tmp_path, ChatSetup(), media=transcribing) as chat:
        chat.llm.transcript = "what's the weather"
        chat.llm.enqueue(Reply(text="Sunny."))
        voice = chat.dc.attachment(VOICE, "voice-message.ogg", voice_seconds=2.0)
        await chat.push(DM, "", ANN, attachments=[voice])
        await chat.settle()
        assert [m["content"] for m in chat.dc.sent(DM)] == ["Sunny."]
        [upload] = chat.llm.transcriptions
        assert upload.data == VOICE
    [stored] = stored_messages(workspace)
    assert stored.content == "what's the weather"
    [kept] = stored.attachments
    assert (kept["kind"], kept["mime"], kept["transcript"]) == (
        "voice",
        "audio/ogg",
        "what's the weather",
    )


async def test_an_attached_document_is_saved_in_the_chats_files_folder(tmp_path: Path) -> None:
    workspace = tmp_path / ".duragent"
    notes = b"# Minutes\n- ship on Friday\n"
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        chat.llm.enqueue(Reply(text="Friday."))
        document = chat.dc.attachment(notes, "minutes.md", content_type="text/markdown")
        await chat.push(DM, "when do we ship?", ANN, attachments=[document])
        await chat.settle()
    [stored] = stored_messages(workspace)
    assert [(a["kind"], a["name"]) for a in stored.attachments] == [("document", "minutes.md")]
    assert chat_files(workspace) == {
        f"files/{stored.session_id}/{sha256(notes)[:8]}-minutes.md": notes
    }


async def test_an_attachment_over_its_limit_is_not_downloaded_and_the_person_is_told(
    tmp_path: Path,
) -> None:
    async with discord_chat(tmp_path, ChatSetup(), media=small_videos) as chat:
        clip = chat.dc.attachment(b"v" * 4096, "clip.mp4", content_type="video/mp4")
        await chat.push(DM, "", ANN, attachments=[clip])
        await chat.settle()
        assert await eventually(lambda: len(chat.dc.sent(DM)) == 1)
        assert [m["content"] for m in chat.dc.sent(DM)] == [
            "That video is 4 KB, over the 1 KB limit for videos, so I did not keep it."
        ]
        assert chat.dc.attachment_downloads() == 0
        assert chat.llm.requests == []
    assert stored_messages(tmp_path / ".duragent") == []
