"""A message's files taken into its session: limits, nothing downloaded twice, transcripts, files.

``MediaIntake`` over a real session registry on a tmp folder and a ``MediaSource`` in memory;
what the person is told is read from ``MemoryOutbound``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

import pytest

from duragent.agents import load_catalog
from duragent.core.attachments import AttachmentKind
from duragent.errors import LLMServerError
from duragent.frontkit import (
    ChatRef,
    InboundMessage,
    MediaIntake,
    MediaLimits,
    MediaRef,
    MediaSettings,
    MediaTooLargeError,
    MediaUnavailableError,
    MemoryOutbound,
    Sender,
)
from duragent.frontkit.media_intake import NO_TRANSCRIBER
from duragent.session import RegistrySettings, SessionRegistry
from duragent.store import SessionStore
from duragent.turns import TurnRunner
from duragent.turns.providers import ProviderPool
from tests.frontkit.media_kit import MemorySource, png, sha256
from tests.frontkit.memory_chat import agent_yaml

T = TypeVar("T")
CHAT = ChatRef("telegram", "42")
PHOTO = png(64, 48)
VOICE = b"OggS\x00voice note bytes"
REPORT = b"%PDF-1.4 a report"
FAST = MediaSettings(retry_pauses=(0.0, 0.0))


class Transcriber:
    """Answers ``text`` (or raises ``fails``), keeping what it was given."""

    def __init__(self, text: str = "buy milk", fails: Exception | None = None) -> None:
        self.text = text
        self.fails = fails
        self.calls: list[tuple[bytes, str, str]] = []

    async def transcribe(
        self, data: bytes, *, filename: str, mime: str, language: str | None = None
    ) -> str:
        self.calls.append((data, filename, mime))
        if self.fails is not None:
            raise self.fails
        return self.text


@dataclass
class Rig:
    workspace: Path
    runner: TurnRunner
    source: MemorySource
    outbound: MemoryOutbound
    session_id: str

    @property
    def agent_dir(self) -> Path:
        return self.workspace / "agents" / "bot"

    def intake(self, settings: MediaSettings = FAST) -> MediaIntake:
        """A new intake (as after a restart: only what is on disk is shared)."""
        return MediaIntake(self.runner, self.outbound, self.source, settings)


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    workspace = tmp_path / ".duragent"
    agent = workspace / "agents" / "bot"
    agent.mkdir(parents=True)
    (agent / "agent.yaml").write_text(agent_yaml("bot", "http://127.0.0.1:9/v1", None))
    catalog = load_catalog(workspace / "agents")
    registry = SessionRegistry(SessionStore(workspace / "sessions"), RegistrySettings())
    await registry.open()
    runner = TurnRunner(
        registry,
        agents=lambda: catalog,
        providers=ProviderPool(),
        workspace_dir=workspace,
        world_memory_dir=workspace / "memory" / "world",
        policy_file=workspace / "policy.yaml",
    )
    session_id = await runner.session_for_chat("telegram", "42", "bot", "dm")
    source = MemorySource({"photo-1": PHOTO, "voice-1": VOICE, "doc-1": REPORT})
    try:
        yield Rig(workspace, runner, source, MemoryOutbound(), session_id)
    finally:
        await registry.aclose()


def message(*media: MediaRef, caption: str | None = None, message_id: str = "7") -> InboundMessage:
    return InboundMessage(
        gateway=CHAT.gateway,
        chat_id=CHAT.chat_id,
        chat_type="dm",
        message_id=message_id,
        sender=Sender("42", display_name="Ann"),
        text=caption,
        content_kind="photo",
        media=media,
    )


PHOTO_REF = MediaRef(AttachmentKind.IMAGE, "photo-1", unique_id="u-photo-1", size=len(PHOTO))
VOICE_REF = MediaRef(AttachmentKind.VOICE, "voice-1", mime="audio/ogg")
REPORT_REF = MediaRef(AttachmentKind.DOCUMENT, "doc-1", name="report.pdf", mime="application/pdf")


async def test_a_photo_is_kept_with_its_pixels_and_the_caption_is_the_text(rig: Rig) -> None:
    taken = await rig.intake().take(
        rig.session_id, message(PHOTO_REF, caption="look"), rig.agent_dir
    )
    assert taken is not None
    assert taken.text == "look"
    [photo] = taken.attachments
    assert (photo.kind, photo.mime, photo.size, photo.sha256) == (
        AttachmentKind.IMAGE,
        "image/png",
        len(PHOTO),
        sha256(PHOTO),
    )
    assert (photo.width, photo.height, photo.platform_id) == (64, 48, "photo-1")
    assert await rig.runner.attachments.read(rig.session_id, photo.sha256) == PHOTO
    assert rig.outbound.texts() == []


async def test_a_redelivered_file_is_not_downloaded_again_even_after_a_restart(rig: Rig) -> None:
    first = await rig.intake().take(rig.session_id, message(PHOTO_REF), rig.agent_dir)
    again = await rig.intake().take(rig.session_id, message(PHOTO_REF), rig.agent_dir)
    assert first is not None
    assert again is not None
    assert again.attachments == first.attachments
    assert rig.source.fetched == ["photo-1"]


async def test_a_photo_is_kept_read_and_noted_in_the_index_in_one_thread_hop(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker thread's hop costs ~0.1 ms of CPU and two context switches: the bytes kept,
    the header read and the index line written are one."""
    intake = rig.intake()
    await intake.take(rig.session_id, message(PHOTO_REF), rig.agent_dir)  # the index is read
    hops: list[object] = []
    to_thread = asyncio.to_thread

    async def counted(func: Callable[..., T], /, *args: object, **kwargs: object) -> T:
        hops.append(func)
        return await to_thread(func, *args, **kwargs)

    monkeypatch.setattr(asyncio, "to_thread", counted)
    second = replace(PHOTO_REF, unique_id="u-photo-2")
    taken = await intake.take(rig.session_id, message(second, message_id="8"), rig.agent_dir)
    assert len(hops) == 1
    assert taken is not None
    assert (taken.attachments[0].mime, taken.attachments[0].width) == ("image/png", 64)
    again = await rig.intake().take(rig.session_id, message(second), rig.agent_dir)
    assert again is not None
    assert again.attachments == taken.attachments
    assert rig.source.fetched == ["photo-1", "photo-1"]  # the index line was written


async def test_a_file_known_to_the_index_but_not_held_by_the_session_is_downloaded_again(
    rig: Rig,
) -> None:
    await rig.intake().take(rig.session_id, message(PHOTO_REF), rig.agent_dir)
    other = await rig.runner.session_for_chat("telegram", "43", "bot", "dm")
    taken = await rig.intake().take(other, message(PHOTO_REF), rig.agent_dir)
    assert taken is not None
    assert rig.source.fetched == ["photo-1", "photo-1"]
    assert await rig.runner.attachments.has(other, sha256(PHOTO))


async def test_a_declared_size_over_the_limit_is_refused_without_a_download_and_told(
    rig: Rig,
) -> None:
    settings = replace(FAST, limits=MediaLimits(video=1024))
    video = MediaRef(AttachmentKind.VIDEO, "video-1", name="clip.mp4", size=5 * 1024 * 1024)
    intake = rig.intake(settings)
    assert await intake.take(rig.session_id, message(video), rig.agent_dir) is None
    taken = await intake.take(rig.session_id, message(video, caption="watch"), rig.agent_dir)
    assert rig.source.fetched == []
    told = "That video is 5 MB, over the 1 KB limit for videos, so I did not keep it."
    assert rig.outbound.texts(CHAT) == [told, told]
    assert taken is not None
    assert taken.attachments == ()
    assert taken.text == "watch\n[video clip.mp4 of 5 MB not kept: over the 1 KB limit]"


async def test_bytes_beyond_the_limit_found_while_downloading_are_refused(rig: Rig) -> None:
    rig.source.failures.append(MediaTooLargeError("over"))
    taken = await rig.intake().take(rig.session_id, message(PHOTO_REF, caption="hi"), rig.agent_dir)
    assert taken is not None
    assert taken.attachments == ()
    assert rig.outbound.texts(CHAT) == [
        "That photo is over the 10 MB limit for photos, so I did not keep it."
    ]


async def test_a_download_failing_for_a_while_is_tried_again(rig: Rig) -> None:
    rig.source.failures.extend([MediaUnavailableError("502", transient=True)] * 2)
    taken = await rig.intake().take(rig.session_id, message(PHOTO_REF), rig.agent_dir)
    assert taken is not None
    assert len(taken.attachments) == 1
    assert rig.outbound.texts() == []


async def test_a_file_that_cannot_be_had_is_told_and_its_caption_still_kept(rig: Rig) -> None:
    rig.source.failures.append(MediaUnavailableError("Telegram said: file expired"))
    taken = await rig.intake().take(rig.session_id, message(PHOTO_REF, caption="hi"), rig.agent_dir)
    assert taken is not None
    assert taken.text == "hi\n[photo not received: it could not be downloaded]"
    assert rig.outbound.texts(CHAT) == [
        "Sorry, I could not download that photo (Telegram said: file expired)."
    ]
    assert rig.source.fetched == []


async def test_a_voice_note_becomes_its_transcript_with_the_caption_after_it(rig: Rig) -> None:
    heard = Transcriber("buy milk")
    intake = rig.intake(replace(FAST, transcriber=heard))
    taken = await intake.take(rig.session_id, message(VOICE_REF, caption="(quick)"), rig.agent_dir)
    assert taken is not None
    assert taken.text == "buy milk\n(quick)"
    [voice] = taken.attachments
    assert (voice.kind, voice.transcript, voice.mime) == (
        AttachmentKind.VOICE,
        "buy milk",
        "audio/ogg",
    )
    assert heard.calls == [(VOICE, "voice", "audio/ogg")]
    again = await rig.intake(replace(FAST, transcriber=heard)).take(
        rig.session_id, message(VOICE_REF), rig.agent_dir
    )
    assert again is not None
    assert again.text == "buy milk"
    assert len(heard.calls) == 1, "a redelivered voice note is not transcribed again"


async def test_a_voice_note_the_transcriber_fails_on_is_kept_untranscribed(rig: Rig) -> None:
    failing = Transcriber(fails=LLMServerError("transcription: 503", status=503))
    intake = rig.intake(replace(FAST, transcriber=failing))
    taken = await intake.take(rig.session_id, message(VOICE_REF), rig.agent_dir)
    assert taken is not None
    assert taken.text == ""
    assert taken.attachments[0].transcript is None
    assert rig.outbound.texts() == []


async def test_without_a_transcriber_each_chat_is_told_once_how_to_set_one_up(rig: Rig) -> None:
    for number in range(2):
        voice = replace(VOICE_REF, platform_id="voice-1", unique_id=f"u{number}")
        taken = await rig.intake().take(
            rig.session_id, message(voice, message_id=str(number)), rig.agent_dir
        )
        assert taken is not None
        assert taken.attachments[0].kind is AttachmentKind.VOICE
    assert rig.outbound.texts(CHAT) == [NO_TRANSCRIBER]
    assert "media.transcription" in NO_TRANSCRIBER
    assert "duragent.yaml" in NO_TRANSCRIBER


async def test_a_document_is_copied_to_the_chats_files_folder(rig: Rig) -> None:
    for _ in range(2):  # a redelivery finds the copy there
        taken = await rig.intake().take(rig.session_id, message(REPORT_REF), rig.agent_dir)
    assert taken is not None
    [report] = taken.attachments
    saved = rig.agent_dir / "files" / rig.session_id / f"{report.sha256[:8]}-report.pdf"
    assert saved.read_bytes() == REPORT
    assert (report.name, report.mime) == ("report.pdf", "application/pdf")
    assert taken.text == ""
