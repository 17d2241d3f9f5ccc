"""Photos, voice notes, documents and files over the limit through Telegram, end to end.

A real runtime against the fake Bot API: users push media with real bytes, the gateway
downloads them (``getFile`` and the file server), and the tests read what the workspace
holds afterwards (the ``user_message`` events, the blobs, the files folder), what the model
and the transcription endpoint were sent, and what the chat was told.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from duragent.testing import Reply
from duragent.testing._telegram_files import DOWNLOAD_METHOD
from duragent.testing.telegram_faults import FaultRule
from tests.frontkit.media_kit import blob, chat_files, png, sha256, stored_messages
from tests.gateways.telegram.rig import telegram_rig
from tests.polling import eventually

PHOTO = png(64, 48)
VOICE = b"OggS\x00\x02 a voice note's bytes"
TRANSCRIBED = {"transcription": {"provider": "openai", "base_url": "<llm>", "model": "whisper-1"}}


def largest(update: dict[str, Any], kind: str) -> dict[str, Any]:
    """The file object of ``kind`` in a pushed update (a photo's largest size)."""
    medium = update["message"][kind]
    found: dict[str, Any] = medium[-1] if isinstance(medium, list) else medium
    return found


async def test_a_photo_is_kept_named_by_its_message_and_confirmed_only_after(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / ".duragent"
    async with telegram_rig(tmp_path) as rig:
        held = FaultRule.slow(2.0, method=DOWNLOAD_METHOD)
        rig.tg.add_fault(held)
        rig.llm.enqueue(Reply(text="A red square."))
        update = rig.tg.push_photo(42, PHOTO, caption="what is this?")
        assert await eventually(lambda: held.matched >= 1), "the photo was never downloaded"
        assert rig.tg.pending_updates(), "confirmed before the photo was kept"
        assert stored_messages(workspace) == []
        assert await rig.replies(42) == ["A red square."]
        await rig.delivered(update)
        await rig.settle()
        file_id = largest(update, "photo")["file_id"]
        assert rig.tg.downloads(file_id) == 1
        assert rig.tg.downloads() == 1, "only the largest size is downloaded"
    [stored] = stored_messages(workspace)
    assert stored.content == "what is this?"
    [photo] = stored.attachments
    assert photo == {
        "kind": "image",
        "mime": "image/png",
        "size": len(PHOTO),
        "sha256": sha256(PHOTO),
        "platform_id": file_id,
        "width": 64,
        "height": 48,
    }
    assert blob(workspace, stored.session_id, sha256(PHOTO)) == PHOTO
    asked = json.dumps(rig.llm.requests[-1].json["messages"][-1])
    assert "what is this?" in asked


async def test_a_photo_over_the_image_limit_is_taken_in_its_largest_size_within_it(
    tmp_path: Path,
) -> None:
    big = png(1000, 800)
    thumbnails = [png(90, 72), png(320, 256), png(800, 640)]
    limit = len(thumbnails[-1]) + 10
    workspace = tmp_path / ".duragent"
    async with telegram_rig(tmp_path, media={"max_bytes": {"image": limit}}) as rig:
        update = rig.tg.push_photo(42, big + b"\0" * limit, thumbnails=thumbnails, caption="hi")
        assert await rig.replies(42)
        await rig.settle()
        sizes = update["message"]["photo"]
        assert [rig.tg.downloads(s["file_id"]) for s in sizes] == [0, 0, 1, 0]
    [stored] = stored_messages(workspace)
    assert stored.attachments[0]["sha256"] == sha256(thumbnails[-1])
    assert (stored.attachments[0]["width"], stored.attachments[0]["height"]) == (800, 640)


async def test_a_voice_note_becomes_its_transcript_and_stays_attached(tmp_path: Path) -> None:
    workspace = tmp_path / ".duragent"
    async with telegram_rig(tmp_path, media=TRANSCRIBED) as rig:
        rig.llm.transcript = "remind me to buy milk"
        rig.llm.enqueue(Reply(text="Noted."))
        update = rig.tg.push_voice(42, VOICE, duration=2)
        assert await rig.replies(42) == ["Noted."]
        await rig.settle()
        [upload] = rig.llm.transcriptions
        assert upload.data == VOICE
        assert upload.model == "whisper-1"
        asked = json.dumps(rig.llm.requests[-1].json["messages"][-1])
        assert "remind me to buy milk" in asked
    [stored] = stored_messages(workspace)
    assert stored.content == "remind me to buy milk"
    [voice] = stored.attachments
    assert voice["kind"] == "voice"
    assert voice["mime"] == "audio/ogg"
    assert voice["transcript"] == "remind me to buy milk"
    assert voice["platform_id"] == largest(update, "voice")["file_id"]
    assert blob(workspace, stored.session_id, sha256(VOICE)) == VOICE


async def test_without_a_transcriber_voice_notes_are_kept_and_the_chat_told_once(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / ".duragent"
    async with telegram_rig(tmp_path) as rig:
        rig.llm.enqueue(Reply(text="first"), Reply(text="second"))
        rig.tg.push_voice(42, VOICE)
        assert await rig.replies(42, count=2)
        rig.tg.push_voice(42, VOICE + b"2")
        assert await rig.replies(42, count=3)
        await rig.settle()
        told = [t for t in rig.tg.sent_messages(42) if "media.transcription" in t]
        assert len(told) == 1, rig.tg.sent_messages(42)
        assert "duragent.yaml" in told[0]
        assert rig.llm.transcriptions == []
    kinds = [[a["kind"] for a in s.attachments] for s in stored_messages(workspace)]
    assert kinds == [["voice"], ["voice"]]
    assert all("transcript" not in s.attachments[0] for s in stored_messages(workspace))


async def test_a_document_is_saved_where_the_agents_tools_read_it(tmp_path: Path) -> None:
    workspace = tmp_path / ".duragent"
    data = b"region,total\nnorth,12\nsouth,30\n"
    async with telegram_rig(tmp_path) as rig:
        rig.llm.enqueue(Reply(text="42 in all."))
        rig.tg.push_document(42, data, file_name="sales.csv", caption="add these up")
        assert await rig.replies(42) == ["42 in all."]
        await rig.settle()
        asked = json.dumps(rig.llm.requests[-1].json["messages"])
    [stored] = stored_messages(workspace)
    [document] = stored.attachments
    assert (document["kind"], document["name"], document["mime"]) == (
        "document",
        "sales.csv",
        "text/csv",
    )
    path = f"files/{stored.session_id}/{sha256(data)[:8]}-sales.csv"
    assert chat_files(workspace) == {path: data}
    assert path in asked, "the model is told where the file is"


async def test_a_file_over_its_limit_is_not_downloaded_and_the_person_is_told(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / ".duragent"
    clip = b"\0\0\0\x18ftypmp42" + b"v" * 5000
    async with telegram_rig(tmp_path, media={"max_bytes": {"video": "1KB"}}) as rig:
        rig.llm.enqueue(Reply(text="I only read the caption."))
        rig.tg.push_video(42, clip, caption="watch this")
        assert await rig.replies(42, count=2)
        rig.tg.push_video(42, clip)  # no caption: nothing left to record
        assert await rig.replies(42, count=3)
        await rig.settle()
        assert rig.tg.downloads() == 0
        told = "That video is 4.9 KB, over the 1 KB limit for videos, so I did not keep it."
        assert rig.tg.sent_messages(42) == [told, "I only read the caption.", told]
        assert len(rig.llm.requests) == 1
    [stored] = stored_messages(workspace)
    assert stored.attachments == []
    assert stored.content.startswith("watch this\n[video of 4.9 KB not kept: over the 1 KB")


async def test_a_file_telegram_will_not_hand_a_bot_is_told_as_over_the_limit(
    tmp_path: Path,
) -> None:
    async with telegram_rig(tmp_path, file_size_limit=100) as rig:
        rig.tg.push_document(42, b"x" * 500, file_name="big.bin")
        assert await rig.replies(42)
        await rig.settle()
        [told] = rig.tg.sent_messages(42)
        assert told.startswith("That file is 500 bytes, over the 20 MB limit")
        assert rig.llm.requests == []
