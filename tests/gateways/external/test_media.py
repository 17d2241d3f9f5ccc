"""An external gateway's ``media`` content: downloaded from its link, kept, named, answered.

The fake gateway child reports a photo, voice note or file as ``content: {"type": "media",
"media_type", "url", "caption"}`` pointing at a ``MediaFileServer`` in the test's process,
which counts each download; the tests read what the workspace holds afterwards, what the
model and the transcription endpoint were sent, and what the gateway was asked to say.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from duragent.config import load_workspace
from duragent.frontkit import MediaLimits, MediaSettings
from duragent.llm.transcription import TranscriptionSettings, transcriber_for
from duragent.runtime import Runtime
from duragent.testing import Reply, ScriptedLLMServer
from duragent.testing._gateway_files import MediaFileServer
from duragent.testing.fake_gateway import media_message
from duragent.testing.gateway_control import GatewayControl
from tests.frontkit.chat_contract_kit import ChatSetup
from tests.frontkit.media_kit import blob, chat_files, png, sha256, stored_messages
from tests.gateways.external.external_chat import external_chat
from tests.polling import eventually

PHOTO = png(40, 30)
VOICE = b"OggS\x00\x02 a voice note"
WITH_ACK = ("--capabilities", "media,edit,delete,typing,reply,inline_keyboard,ack")


def transcribing(llm: ScriptedLLMServer) -> MediaSettings:
    """Voice transcribed by the scripted server's ``/v1/audio/transcriptions``."""
    settings = TranscriptionSettings(base_url=llm.openai_base_url, model="whisper-1")
    return MediaSettings(transcriber=transcriber_for(settings))


def small_documents(llm: ScriptedLLMServer) -> MediaSettings:
    return MediaSettings(limits=MediaLimits(document=1024))


async def test_a_linked_photo_is_kept_before_the_message_is_acknowledged(tmp_path: Path) -> None:
    workspace = tmp_path / ".duragent"
    async with (
        external_chat(tmp_path, ChatSetup(), *WITH_ACK) as chat,
        MediaFileServer() as files,
    ):
        chat.llm.enqueue(Reply(text="A red square."))
        url = files.add(PHOTO, "square.png")
        files.fail_next(1, status=503)  # the file host hiccups: tried again a moment later
        event = media_message("42", url, caption="what is it?", message_id="m1", sender_id="42")
        await chat.child.emit(event)
        assert await eventually(lambda: files.file(url).failed == 1)
        assert chat.child.of_type("ack_message") == [], "acknowledged before the photo was kept"
        assert stored_messages(workspace) == []
        sent = await chat.child.command("send_message")
        assert sent["content"] == "A red square."
        assert chat.child.of_type("ack_message") == [
            {"type": "ack_message", "message_id": "m1", "chat_id": "42"}
        ]
        await chat.child.emit(event)  # sent again (unacknowledged after a crash, say)
        assert await eventually(lambda: chat.gateway.handled >= 2)
        await chat.settle()
        assert files.downloads(url) == 1
        asked = json.dumps(chat.llm.requests[-1].json["messages"][-1])
    assert "what is it?" in asked
    [stored] = stored_messages(workspace)
    assert stored.content == "what is it?"
    assert stored.attachments == [
        {
            "kind": "image",
            "mime": "image/png",
            "size": len(PHOTO),
            "sha256": sha256(PHOTO),
            "name": "square.png",
            "platform_id": url,
            "width": 40,
            "height": 30,
        }
    ]
    assert blob(workspace, stored.session_id, sha256(PHOTO)) == PHOTO


async def test_a_linked_voice_note_becomes_its_transcript(tmp_path: Path) -> None:
    workspace = tmp_path / ".duragent"
    async with (
        external_chat(tmp_path, ChatSetup(), media=transcribing) as chat,
        MediaFileServer() as files,
    ):
        chat.llm.transcript = "call mum at six"
        chat.llm.enqueue(Reply(text="Will do."))
        url = files.add(VOICE, "note.oga", "audio/ogg")
        await chat.emit(
            media_message("42", url, media_type="voice", message_id="v1", sender_id="42")
        )
        sent = await chat.child.command("send_message")
        assert sent["content"] == "Will do."
        [upload] = chat.llm.transcriptions
        assert upload.data == VOICE
    [stored] = stored_messages(workspace)
    assert stored.content == "call mum at six"
    [voice] = stored.attachments
    assert (voice["kind"], voice["mime"], voice["transcript"]) == (
        "voice",
        "audio/ogg",
        "call mum at six",
    )
    assert "name" not in voice


async def test_a_linked_document_is_saved_in_the_chats_files_folder(tmp_path: Path) -> None:
    workspace = tmp_path / ".duragent"
    data = b"name,age\nann,31\n"
    async with external_chat(tmp_path, ChatSetup()) as chat, MediaFileServer() as files:
        chat.llm.enqueue(Reply(text="One person."))
        url = files.add(data, "people.csv")
        event = media_message(
            "42", url, media_type="document", caption="how many?", message_id="d1", sender_id="42"
        )
        await chat.emit(event)
        await chat.child.command("send_message")
        await chat.settle()
    [stored] = stored_messages(workspace)
    [document] = stored.attachments
    assert (document["kind"], document["name"], document["mime"]) == (
        "document",
        "people.csv",
        "text/csv",
    )
    assert chat_files(workspace) == {
        f"files/{stored.session_id}/{sha256(data)[:8]}-people.csv": data
    }


async def test_a_file_declared_over_its_limit_is_not_downloaded_and_the_person_is_told(
    tmp_path: Path,
) -> None:
    async with (
        external_chat(tmp_path, ChatSetup(), media=small_documents) as chat,
        MediaFileServer() as files,
    ):
        url = files.add(b"x" * 3000, "big.bin")
        event = media_message(
            "42", url, media_type="document", size=3000, message_id="b1", sender_id="42"
        )
        await chat.emit(event)
        sent = await chat.child.command("send_message")
        await chat.settle()
        assert sent["content"] == (
            "That file is 2.9 KB, over the 1 KB limit for files, so I did not keep it."
        )
        assert files.downloads(url) == 0
        assert chat.llm.requests == []
    assert stored_messages(tmp_path / ".duragent") == []


async def test_a_link_to_a_private_address_is_refused_and_the_person_told(tmp_path: Path) -> None:
    async with external_chat(tmp_path, ChatSetup()) as chat:
        chat.llm.enqueue(Reply(text="I see only your words."))
        event = media_message(
            "42", "http://10.1.2.3/secret.png", caption="look", message_id="p1", sender_id="42"
        )
        await chat.emit(event)
        told = await chat.child.command("send_message")
        assert told["content"].startswith("Sorry, I could not download that photo (its link is")
        assert "10.1.2.3" in told["content"]
        assert "media.allow_private" in told["content"]
        reply = await chat.child.command("send_message", lambda c: c is not told)
        assert reply["content"] == "I see only your words."
        await chat.settle()


async def test_media_allow_private_in_duragent_yaml_decides_where_links_may_point(
    tmp_path: Path, write_agent: Callable[..., Path]
) -> None:
    """Loopback is allowed by default; ``allow_private: []`` refuses it too."""
    write_agent("assistant")
    async with GatewayControl() as control, MediaFileServer() as files:
        args = ["-m", "duragent.testing.fake_gateway", "--control", str(control.path)]
        gateway = {"name": "fake", "command": sys.executable, "args": args}
        config = {"gateways": {"external": [gateway]}, "media": {"allow_private": []}}
        (tmp_path / "duragent.yaml").write_text(json.dumps(config))
        runtime = Runtime(load_workspace(tmp_path / "duragent.yaml"), port=0)
        await runtime.start()
        try:
            child = await control.child()
            url = files.add(PHOTO, "square.png")
            await child.emit(media_message("42", url, message_id="m1", sender_id="42"))
            told = await child.command("send_message")
        finally:
            await runtime.aclose()
        assert "its link is refused: 127.0.0.1" in told["content"]
        assert files.downloads(url) == 0
