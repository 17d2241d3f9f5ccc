from __future__ import annotations

from pathlib import Path

from duragent.store.chat_index import ChatIndex


def test_mappings_survive_a_reload(tmp_path: Path) -> None:
    index = ChatIndex(tmp_path)
    index.set(("telegram", "1", "a"), "s1")
    index.set(("telegram", "2", "a"), "s2")
    index.set(("telegram", "1", "a"), "s3")
    index.set(("telegram", "2", "a"), None)
    fresh = ChatIndex(tmp_path)
    fresh.load()
    assert fresh.get(("telegram", "1", "a")) == "s3"
    assert fresh.get(("telegram", "2", "a")) is None


def test_unreadable_lines_are_skipped(tmp_path: Path) -> None:
    index = ChatIndex(tmp_path)
    index.set(("http", "c", "a"), "s1")
    with index.path.open("a") as fh:
        fh.write('{"key": ["torn", \n')
    fresh = ChatIndex(tmp_path)
    fresh.load()
    assert fresh.get(("http", "c", "a")) == "s1"


def test_the_file_is_compacted_when_it_grows(tmp_path: Path) -> None:
    index = ChatIndex(tmp_path)
    for i in range(1500):
        index.set(("telegram", "1", "a"), f"s{i}")
    assert len(index.path.read_text().splitlines()) < 1000
    fresh = ChatIndex(tmp_path)
    fresh.load()
    assert fresh.get(("telegram", "1", "a")) == "s1499"


def test_removing_a_session_unmaps_all_its_chats(tmp_path: Path) -> None:
    index = ChatIndex(tmp_path)
    index.set(("a", "1", "x"), "s1")
    index.set(("b", "2", "x"), "s1")
    index.set(("c", "3", "x"), "s2")
    index.remove_session("s1")
    assert [sid for _, sid in index.items()] == ["s2"]
