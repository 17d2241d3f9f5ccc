"""``PreviewStore``: the previews in chats, on disk, each until its reply is final."""

from __future__ import annotations

from pathlib import Path

from duragent.frontkit import ChatRef, SentMessage
from duragent.frontkit.preview_store import PreviewRecord, PreviewStore, SharedPreviewStore


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


async def test_a_record_whose_rename_a_kill_cut_is_still_read(tmp_path: Path) -> None:
    """Found by the month of strangers: a kill during the record's fsync left four previews'
    records as complete temporary files, never renamed; the next start did not know them,
    and the chats kept four half-written replies."""
    folder = tmp_path / "previews"
    store = PreviewStore(folder)
    cut = record("s1", "telegram", "143")
    await store.save(cut)
    [written] = folder.glob("*.json")
    written.rename(written.with_name(f"{written.name}.01KET9P6M0FYE2YXYP4GVKHD6D.tmp"))
    (folder / "0123.json.01KET9P6M0FYE2YXYP4GVKHD6E.tmp").write_text('{"session_id": "s')

    assert PreviewStore(folder).load("telegram") == [cut]  # the next start
    assert [p.name for p in folder.iterdir()] == [written.name]  # in place; the half gone
    await store.drop(cut)
    assert store.load("telegram") == []


async def test_a_record_is_in_place_before_its_save_first_waits(tmp_path: Path) -> None:
    """Found by the month of strangers: saved through a thread, a burst of previews' records
    waited behind each other, and one kill in that wait left three previews nobody knew of.
    The record is now written before the coroutine yields (a kill loses nothing the kernel
    holds); only its fsyncs run on a thread."""
    folder = tmp_path / "previews"
    store = PreviewStore(folder)
    kept = record("s1", "telegram", "109")
    saving = store.save(kept)
    saving.send(None)  # up to its first wait: nothing else has run yet
    assert PreviewStore(folder).load("telegram") == [kept]  # as a restarted process reads it
    saving.close()


class MemoryRows:
    """``PreviewRows`` as a dict: what the nodes' shared table holds."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str, str], str] = {}

    def save(self, gateway: str, chat_id: str, message_id: str, session_id: str) -> None:
        self.rows[(gateway, chat_id, message_id)] = session_id

    def drop(self, gateway: str, chat_id: str, message_id: str) -> None:
        self.rows.pop((gateway, chat_id, message_id), None)

    def load(self, gateway: str) -> list[tuple[str, str, str]]:
        return [(c, m, s) for (g, c, m), s in self.rows.items() if g == gateway]


async def test_with_several_nodes_a_preview_is_a_shared_row_and_never_a_file(
    tmp_path: Path,
) -> None:
    rows = MemoryRows()
    store = SharedPreviewStore(rows, tmp_path / "previews")
    kept = record("s1", "telegram", "7")
    await store.save(kept)
    assert rows.rows == {("telegram", "42", "7"): "s1"}
    assert not (tmp_path / "previews").exists()  # a file would outlive another node's drop
    assert SharedPreviewStore(rows, tmp_path / "elsewhere").load("telegram") == [kept]
    await store.drop(kept)
    assert store.load("telegram") == []


async def test_a_preview_recorded_before_the_move_to_a_shared_store_is_found_and_dropped(
    tmp_path: Path,
) -> None:
    old = record("s1", "telegram", "7")
    await PreviewStore(tmp_path / "previews").save(old)  # on files, before the switch
    store = SharedPreviewStore(MemoryRows(), tmp_path / "previews")
    assert store.load("telegram") == [old]
    await store.drop(old)
    assert store.load("telegram") == []
    assert PreviewStore(tmp_path / "previews").load("telegram") == []
