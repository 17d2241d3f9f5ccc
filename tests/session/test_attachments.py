"""A message's attachments are recorded with it, in one event, and come back on every replay.

The bytes are stored first (``SessionStorage.attachments``); ``add_user_message`` then writes
one ``user_message`` event listing them, so the message and its attachments are durable
together. Replay (from the events, or from the snapshot's checkpointed messages) puts them on
the ``Message``; a redelivered platform id is still a duplicate; an attachment whose bytes
are not stored is refused before anything is written.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from duragent.core.attachments import Attachment, AttachmentKind, content_hash
from duragent.core.events import EventType
from duragent.core.messages import Role
from duragent.session import NewSession, RegistrySettings, SessionRegistry
from duragent.session.history import events_to_messages
from duragent.store import AttachmentNotFoundError, MemorySessionStore, SessionStorage, SessionStore

JPEG = b"\xff\xd8\xff\xe0" + bytes(range(256)) * 8
OGG = b"OggS voice note"


def attachment(
    data: bytes, kind: AttachmentKind, name: str | None = None, platform_id: str | None = None
) -> Attachment:
    mime = "image/jpeg" if kind is AttachmentKind.IMAGE else "audio/ogg"
    sha = content_hash(data)
    return Attachment(
        kind=kind, mime=mime, size=len(data), sha256=sha, name=name, platform_id=platform_id
    )


PHOTO = attachment(JPEG, AttachmentKind.IMAGE, name="holiday.jpg", platform_id="f1")
VOICE = attachment(OGG, AttachmentKind.VOICE, platform_id="f2")


@pytest.fixture(params=["files", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SessionStorage:
    return SessionStore(tmp_path / "sessions") if request.param == "files" else MemorySessionStore()


@pytest.fixture
async def registry(store: SessionStorage) -> AsyncIterator[SessionRegistry]:
    reg = SessionRegistry(store, RegistrySettings(ask_timeout=10))
    await reg.open()
    yield reg
    await reg.aclose()


async def new_session(reg: SessionRegistry, store: SessionStorage) -> str:
    """A session whose photo and voice note are stored already (as a front end does)."""
    sid = await reg.create(NewSession(agent="a"))
    blobs = store.attachments(sid)
    blobs.put(JPEG)
    blobs.put(OGG)
    return sid


async def test_a_message_and_its_attachments_are_one_event_and_one_message(
    registry: SessionRegistry, store: SessionStorage
) -> None:
    sid = await new_session(registry, store)
    session = registry.handle(sid)
    result = await session.add_user_message(
        "look at this", platform_message_id="m1", attachments=(PHOTO, VOICE)
    )
    events = [e for e in await session.events() if e.type == EventType.USER_MESSAGE]
    assert [e.seq for e in events] == [result.seq]
    assert events[0].data["attachments"] == [PHOTO.to_data(), VOICE.to_data()]
    window = await session.messages()
    assert (window[-1].role, window[-1].content) == (Role.USER, "look at this")
    assert window[-1].attachments == (PHOTO, VOICE)


async def test_a_text_message_is_recorded_as_before(
    registry: SessionRegistry, store: SessionStorage
) -> None:
    sid = await new_session(registry, store)
    await registry.handle(sid).add_user_message("just text")
    event = (await registry.handle(sid).events())[-1]
    assert "attachments" not in event.data
    assert (await registry.handle(sid).messages())[-1].attachments == ()


async def test_replay_after_a_restart_puts_the_attachments_back_on_the_message(
    registry: SessionRegistry, store: SessionStorage
) -> None:
    sid = await new_session(registry, store)
    await registry.handle(sid).add_user_message("see", attachments=(PHOTO,))
    await registry.stop(sid)
    window = await registry.handle(sid).messages()  # a new actor replays the log
    assert [m.attachments for m in window if m.role is Role.USER] == [(PHOTO,)]


async def test_a_message_checkpointed_into_the_snapshot_keeps_its_attachments(
    registry: SessionRegistry, store: SessionStorage
) -> None:
    sid = await new_session(registry, store)
    session = registry.handle(sid)
    await session.add_user_message("first, with a photo", attachments=(PHOTO,))
    for i in range(60):  # past a checkpoint: the first message now lives in the snapshot
        await session.add_user_message(f"q{i}")
    await registry.stop(sid)
    snapshot = store.snapshot(sid).read()
    assert snapshot is not None
    assert snapshot.checkpoint_seq > 2
    assert snapshot.conversation[0].attachments == (PHOTO,)
    window = await registry.handle(sid).messages()
    first = next(m for m in window if m.content == "first, with a photo")
    assert first.attachments == (PHOTO,)


async def test_a_redelivered_message_with_attachments_is_a_duplicate(
    registry: SessionRegistry, store: SessionStorage
) -> None:
    sid = await new_session(registry, store)
    session = registry.handle(sid)
    first = await session.add_user_message("photo", platform_message_id="m7", attachments=(PHOTO,))
    again = await session.add_user_message("photo", platform_message_id="m7", attachments=(PHOTO,))
    assert (again.seq, again.duplicate) == (first.seq, True)
    users = [e for e in await session.events() if e.type == EventType.USER_MESSAGE]
    assert len(users) == 1


async def test_an_attachment_whose_bytes_are_not_stored_is_refused_and_nothing_is_written(
    registry: SessionRegistry, store: SessionStorage
) -> None:
    sid = await new_session(registry, store)
    session = registry.handle(sid)
    before = (await session.info()).last_seq
    missing = attachment(b"never downloaded", AttachmentKind.IMAGE)
    with pytest.raises(AttachmentNotFoundError, match=missing.sha256):
        await session.add_user_message("see", attachments=(PHOTO, missing))
    assert (await session.info()).last_seq == before


async def test_the_history_shows_a_messages_attachments(
    registry: SessionRegistry, store: SessionStorage
) -> None:
    sid = await new_session(registry, store)
    await registry.handle(sid).add_user_message("see", attachments=(VOICE,))
    await registry.handle(sid).add_user_message("and text")
    shown = events_to_messages(await registry.handle(sid).events(), include_tools=False)
    assert [m.get("attachments") for m in shown] == [[VOICE.to_data()], None]


async def test_the_event_on_disk_lists_the_attachments_as_json(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    reg = SessionRegistry(store, RegistrySettings(ask_timeout=10))
    await reg.open()
    try:
        sid = await new_session(reg, store)
        await reg.handle(sid).add_user_message("see", attachments=(PHOTO,))
    finally:
        await reg.aclose()
    lines = (tmp_path / "sessions" / sid / "events.jsonl").read_text().splitlines()
    recorded = [json.loads(line) for line in lines if '"user_message"' in line]
    assert [r["attachments"] for r in recorded] == [[PHOTO.to_data()]]
    assert (tmp_path / "sessions" / sid / "attachments" / PHOTO.sha256).read_bytes() == JPEG
