"""Saved full outputs (issue 20 item 5): atomic files per session, valid ids only, limits kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.store import MemorySessionStore, SavedOutputLimits, SavedOutputNotFoundError
from duragent.store.saved_outputs import OUTPUTS_DIRNAME, SavedOutputFiles, new_output_id
from duragent.store.session_store import SessionStore


def files(tmp_path: Path, **limits: int) -> SavedOutputFiles:
    store = SessionStore(tmp_path / "sessions")
    store.open()
    store.create("s1")
    return store.saved_outputs("s1", SavedOutputLimits(**limits))


def test_a_saved_output_is_read_back_whole_from_the_sessions_folder(tmp_path: Path) -> None:
    outputs = files(tmp_path)
    output_id = outputs.new_id()
    text = "line ünïcode 😀\n" * 1000

    outputs.save(output_id, text)

    assert outputs.read(output_id) == text
    assert (tmp_path / "sessions" / "s1" / OUTPUTS_DIRNAME / f"{output_id}.txt").is_file()
    assert not list((tmp_path / "sessions" / "s1" / OUTPUTS_DIRNAME).glob("*.tmp"))


@pytest.mark.parametrize(
    "bad",
    [
        "../state.yaml",
        "out_../../s2/outputs/x",
        "out_01JABCDEFGHJKMNPQRSTVWXYZ0/../../x",
        "/etc/passwd",
        "out_01jabcdefghjkmnpqrstvwxyz0",  # lower case is not an id
        "out_01JABCDEFGHJKMNPQRSTVWXYZI",  # I is not Crockford base32
        "",
    ],
)
def test_anything_but_a_well_formed_id_is_not_found_and_never_becomes_a_path(
    tmp_path: Path, bad: str
) -> None:
    outputs = files(tmp_path)
    (tmp_path / "sessions" / "s1" / "state.yaml").write_text("secret")

    with pytest.raises(SavedOutputNotFoundError):
        outputs.read(bad)
    with pytest.raises(SavedOutputNotFoundError):
        outputs.save(bad, "x")


def test_another_sessions_output_is_not_found(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    store.open()
    store.create("s1")
    store.create("s2")
    mine = store.saved_outputs("s1")
    output_id = mine.new_id()
    mine.save(output_id, "private")

    with pytest.raises(SavedOutputNotFoundError):
        store.saved_outputs("s2").read(output_id)


def test_an_output_larger_than_the_cap_is_saved_up_to_it_and_says_so(tmp_path: Path) -> None:
    outputs = files(tmp_path, max_output_bytes=1024)
    output_id = outputs.new_id()

    outputs.save(output_id, "é" * 5000)

    saved = outputs.read(output_id)
    assert saved.startswith("é" * 512)
    assert "[saved output stops here: first 1024 of 10000 bytes]" in saved


def test_the_oldest_outputs_go_when_the_session_passes_its_cap(tmp_path: Path) -> None:
    outputs = files(tmp_path, max_session_bytes=2500)
    ids = []
    for _ in range(5):
        output_id = outputs.new_id()
        outputs.save(output_id, "x" * 1000)
        ids.append(output_id)

    assert outputs.ids() == ids[-2:]
    with pytest.raises(SavedOutputNotFoundError):
        outputs.read(ids[0])


def test_outputs_older_than_the_retention_are_removed_at_the_next_save(tmp_path: Path) -> None:
    outputs = files(tmp_path, retention_days=7)
    old = "out_00" + "0" * 8 + "ABCDEFGHJKMNPQRS"  # saved at the epoch
    outputs.save(old, "old")
    assert outputs.ids() == [old]  # the one just saved is never removed

    fresh = new_output_id()
    outputs.save(fresh, "new")

    assert outputs.ids() == [fresh]


def test_the_memory_backend_follows_the_same_rules() -> None:
    store = MemorySessionStore()
    mine = store.saved_outputs("s1", SavedOutputLimits(max_session_bytes=1500))
    first, second = mine.new_id(), mine.new_id()
    mine.save(first, "a" * 1000)
    mine.save(second, "b" * 1000)

    assert mine.ids() == [second]
    assert store.saved_outputs("s1").read(second) == "b" * 1000
    with pytest.raises(SavedOutputNotFoundError):
        store.saved_outputs("s2").read(second)
    with pytest.raises(SavedOutputNotFoundError):
        mine.read("../s2")
