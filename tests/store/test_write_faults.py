"""A disk fault injected into any write path — every atomic replacement, the rollover of the
event log — loses nothing already accepted and surfaces as a ``StorageError`` naming the file.

The faults come from ``FailingFileOps`` at the OS boundary; before the store seams, the
rollover and three of the atomic writes bypassed it and no test could reach them.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from duragent.core.events import Event
from duragent.core.snapshot import SessionSnapshot
from duragent.errors import StorageError
from duragent.store.atomic import atomic_write
from duragent.store.chat_index import ChatIndex
from duragent.store.event_log import EventLog
from duragent.store.snapshot_file import SnapshotFile
from tests.store.failing_ops import FailingFileOps

FAULTS = ["write", "fsync", "rename"]


def inject(ops: FailingFileOps, fault: str) -> None:
    """Make the next atomic write fail at ``fault``."""
    if fault == "write":
        ops.failing = True
    elif fault == "fsync":
        ops.fail_fsync = True
    else:
        ops.fail_replace = True


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def user(seq: int) -> Event:
    return Event.user_message(seq, content=f"m{seq}")


def seqs(events: list[Event]) -> list[int]:
    return [e.seq for e in events]


# --- atomic_write itself ---------------------------------------------------------------------


@pytest.mark.parametrize("fault", FAULTS)
def test_a_failed_atomic_write_keeps_the_old_file_and_leaves_no_temp(
    tmp_path: Path, fault: str
) -> None:
    target = tmp_path / "note.md"
    target.write_bytes(b"old\n")
    ops = FailingFileOps()
    inject(ops, fault)
    with pytest.raises(StorageError) as caught:
        atomic_write(target, b"new\n", ops)
    assert target.read_bytes() == b"old\n"
    assert leftovers(tmp_path) == []
    assert f"writing {target}" in str(caught.value)
    assert caught.value.errno in (errno.ENOSPC, errno.EIO)


def test_a_failed_folder_fsync_is_reported_after_the_replacement(tmp_path: Path) -> None:
    target = tmp_path / "note.md"
    ops = FailingFileOps()
    ops.fail_dir_fsync = True
    with pytest.raises(StorageError, match="writing"):
        atomic_write(target, b"new\n", ops)
    assert target.read_bytes() == b"new\n"  # replaced, its durability not confirmed


def test_an_atomic_write_can_keep_the_replaced_files_mode(tmp_path: Path) -> None:
    target = tmp_path / "policy.local.yaml"
    target.write_text("a\n")
    target.chmod(0o640)
    atomic_write(target, b"b\n", keep_mode=True, new_file_mode=0o600, hidden_temp=True)
    fresh = tmp_path / "new.md"
    atomic_write(fresh, b"c\n", keep_mode=True, new_file_mode=0o600)
    assert (target.stat().st_mode & 0o777, fresh.stat().st_mode & 0o777) == (0o640, 0o600)


# --- the snapshot ------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", FAULTS)
def test_a_failed_snapshot_keeps_the_previous_one(tmp_path: Path, fault: str) -> None:
    ops = FailingFileOps()
    snapshots = SnapshotFile(tmp_path, ops)
    first = SessionSnapshot(
        session_id="s1", agent="a", created_at="t0", updated_at="t0", last_event_seq=1
    )
    snapshots.write(first)
    inject(ops, fault)
    first.last_event_seq = 9
    with pytest.raises(StorageError, match=r"state\.yaml"):
        snapshots.write(first)
    loaded = SnapshotFile(tmp_path).read()
    assert loaded is not None
    assert loaded.last_event_seq == 1
    assert leftovers(tmp_path) == []


# --- the chat index ----------------------------------------------------------------------------


@pytest.mark.parametrize("fault", FAULTS)
def test_a_failed_chat_index_rewrite_keeps_every_mapping(tmp_path: Path, fault: str) -> None:
    ops = FailingFileOps()
    index = ChatIndex(tmp_path, ops)
    index.set(("http", "c1", "a"), "s1")
    inject(ops, fault)
    with pytest.raises(StorageError, match=r"chats\.jsonl"):
        index.rebuild([(("http", "c2", "a"), "s2")])
    reloaded = ChatIndex(tmp_path)
    reloaded.load()
    assert reloaded.items() == [(("http", "c1", "a"), "s1")]
    assert leftovers(tmp_path) == []


def test_a_failed_compact_rewrite_of_the_chat_index_does_not_fail_the_mapping(
    tmp_path: Path,
) -> None:
    ops = FailingFileOps()
    index = ChatIndex(tmp_path, ops)
    for i in range(1000):
        index.set(("http", "same", "a"), f"s{i}")
    ops.fail_replace = True  # the 1001st line triggers the rewrite, whose rename fails
    index.set(("http", "same", "a"), "last")
    reloaded = ChatIndex(tmp_path)
    reloaded.load()
    assert reloaded.get(("http", "same", "a")) == "last"
    assert ops.failures == 1


# --- the rollover of the event log -----------------------------------------------------------


def test_a_failed_archive_append_in_a_rollover_loses_nothing(tmp_path: Path) -> None:
    ops = FailingFileOps(partial=9)
    log = EventLog(tmp_path, ops)
    log.append([user(i) for i in range(1, 7)])
    ops.failing, ops.only = True, "archive"
    with pytest.raises(StorageError, match="moving events up to seq 4 out of"):
        log.roll_over(4, archive=True)
    assert seqs(log.read()[0]) == [1, 2, 3, 4, 5, 6]  # still live
    assert log.read_archive() == []  # the torn archive write was rolled back
    assert (tmp_path / "events.archive.jsonl").read_bytes() == b""
    log.append([user(7)])  # the log still works
    ops.failing = False
    assert log.roll_over(4, archive=True) == 4  # and the next rollover succeeds
    assert seqs(log.read_archive()) == [1, 2, 3, 4]
    assert seqs(log.read()[0]) == [5, 6, 7]


@pytest.mark.parametrize("fault", FAULTS)
def test_a_failed_replacement_of_the_live_log_loses_nothing(tmp_path: Path, fault: str) -> None:
    ops = FailingFileOps()
    log = EventLog(tmp_path, ops)
    log.append([user(i) for i in range(1, 7)])
    ops.only = ".tmp"  # the archive append works; the new live log does not
    inject(ops, fault)
    with pytest.raises(StorageError, match=r"events\.jsonl"):
        log.roll_over(4, archive=True)
    assert seqs(log.read()[0]) == [1, 2, 3, 4, 5, 6]
    assert seqs(log.read_archive()) == [1, 2, 3, 4]  # both hold 1–4: readers de-duplicate
    assert leftovers(tmp_path) == []
    ops.failing = ops.fail_fsync = ops.fail_replace = False
    log.append([user(7)])
    log.roll_over(4, archive=True)  # the retry does not archive 1–4 twice
    assert seqs(log.read_archive()) == [1, 2, 3, 4]
    assert seqs(log.read()[0]) == [5, 6, 7]


def test_a_failed_discarding_rollover_keeps_the_live_log(tmp_path: Path) -> None:
    ops = FailingFileOps()
    log = EventLog(tmp_path, ops)
    log.append([user(i) for i in range(1, 4)])
    ops.fail_replace = True
    with pytest.raises(StorageError):
        log.roll_over(2, archive=False)
    assert seqs(EventLog(tmp_path).read()[0]) == [1, 2, 3]
