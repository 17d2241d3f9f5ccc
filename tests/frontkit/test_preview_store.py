"""``PreviewStore``: the previews in chats, on disk, each until its reply is final."""

from __future__ import annotations

from pathlib import Path

from duragent.frontkit import ChatRef, SentMessage
from duragent.frontkit.preview_store import PreviewRecord, PreviewStore


def record(session: str, gateway: str, message_id: str) -> PreviewRecord:
    return PreviewRecord(session, SentMessage(ChatRef(gateway, "42"), message_id))


async def test_a_saved_preview_is_found_by_its_gateway_until_it_is_dropped(tmp_path: Path) -> None:
    store = PreviewStore(tmp_path / "previews")
    kept, other = record("s1", "telegram", "7"), record("s2", "discord", "8")
    await store.save(kept)
    await store.save(other)
    assert PreviewStore(tmp_path / "previews").load("telegram") == [kept]  # another process
    await store.drop(kept)
    await store.drop(kept)  # twice is harmless
    assert store.load("telegram") == []
    assert store.load("discord") == [other]


def test_no_folder_is_no_previews(tmp_path: Path) -> None:
    assert PreviewStore(tmp_path / "never").load("telegram") == []


async def test_a_file_that_does_not_read_is_skipped_and_left_alone(tmp_path: Path) -> None:
    store = PreviewStore(tmp_path)
    await store.save(record("s1", "telegram", "7"))
    (tmp_path / "stray.json").write_text("{not json")
    assert [r.message.message_id for r in store.load("telegram")] == ["7"]
    assert (tmp_path / "stray.json").exists()


def test_previews_sort_by_their_platform_ids_as_numbers() -> None:
    found = sorted([record("s", "t", "10"), record("s", "t", "9")], key=lambda r: r.order)
    assert [r.message.message_id for r in found] == ["9", "10"]
