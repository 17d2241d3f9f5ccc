"""The file backend of attachments: what is on disk, what a put writes, what a crash leaves.

The crash tests run a real child process (``attachment_crash_child.py``) and SIGKILL it in
the middle of a put: the blob's final name then holds the whole blob or does not exist.
"""

from __future__ import annotations

import errno
import hashlib
import os
import random
import time
from pathlib import Path

import pytest

from duragent.core.attachments import content_hash
from duragent.core.events import Event
from duragent.errors import StorageError
from duragent.store import SessionStore
from duragent.store.atomic import temp_path
from duragent.store.attachment_blobs import (
    ATTACHMENTS_DIRNAME,
    PROCESS_STARTED,
    STALE_TEMP_SECONDS,
    AttachmentFiles,
)
from duragent.store.fileops import OsFileOps
from tests.store.attachment_crash_child import Child

DATA = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 10


class CountingOps(OsFileOps):
    """The real OS calls, counting the files created and renamed."""

    def __init__(self) -> None:
        self.created = 0
        self.renamed = 0

    def open_new(self, path: Path, mode: int | None = None) -> int:
        self.created += 1
        return super().open_new(path, mode)

    def replace(self, source: Path, target: Path) -> None:
        self.renamed += 1
        super().replace(source, target)


class FullDiskOps(OsFileOps):
    """The real OS calls, but the disk is full for every write."""

    def write(self, fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


def session_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "sessions" / "s1"
    folder.mkdir(parents=True)
    return folder


def torn_temp(folder: Path, data: bytes, *, mtime: float) -> Path:
    """A temporary file a put left (the name ``atomic_write`` gives it), last written at
    ``mtime``."""
    (folder / ATTACHMENTS_DIRNAME).mkdir(exist_ok=True)
    torn = temp_path(folder / ATTACHMENTS_DIRNAME / content_hash(data))
    torn.write_bytes(data[:10])
    os.utime(torn, (mtime, mtime))
    return torn


def test_a_blob_is_a_file_named_by_its_hash_in_the_sessions_attachments_folder(
    tmp_path: Path,
) -> None:
    folder = session_dir(tmp_path)
    sha = AttachmentFiles(folder).put(DATA)
    assert (folder / "attachments" / sha).read_bytes() == DATA
    assert [p.name for p in (folder / "attachments").iterdir()] == [sha]


def test_a_second_put_of_the_same_bytes_writes_nothing(tmp_path: Path) -> None:
    ops = CountingOps()
    blobs = AttachmentFiles(session_dir(tmp_path), ops)
    blobs.put(DATA)
    assert (ops.created, ops.renamed) == (1, 1)
    blobs.put(DATA)
    assert (ops.created, ops.renamed) == (1, 1)


def test_a_put_the_disk_refuses_leaves_no_blob_and_no_temporary_file(tmp_path: Path) -> None:
    folder = session_dir(tmp_path)
    with pytest.raises(StorageError, match="No space left"):
        AttachmentFiles(folder, FullDiskOps()).put(DATA)
    assert list((folder / ATTACHMENTS_DIRNAME).iterdir()) == []
    assert AttachmentFiles(folder).put(DATA) == content_hash(DATA)  # the disk has room again


def test_after_a_restart_temporary_files_from_before_it_go_and_newer_ones_stay(
    tmp_path: Path,
) -> None:
    folder = session_dir(tmp_path)
    now = time.time()
    crashed = torn_temp(folder, b"a" * 20, mtime=now - 120)  # by the process that crashed
    writing = torn_temp(folder, b"b" * 20, mtime=now)  # a put of this process, writing now
    blobs = AttachmentFiles(folder, started=now - 60)
    assert blobs.remove_stale_temp_files() == 1
    assert (crashed.exists(), writing.exists()) == (False, True)
    assert blobs.hashes() == []  # a temporary file is never a blob


def test_a_long_running_process_removes_temporary_files_untouched_for_an_hour(
    tmp_path: Path,
) -> None:
    folder = session_dir(tmp_path)
    now = time.time()
    forgotten = torn_temp(folder, b"a" * 20, mtime=now - STALE_TEMP_SECONDS - 5)
    recent = torn_temp(folder, b"b" * 20, mtime=now - 120)  # another process may write it
    blobs = AttachmentFiles(folder, started=now - 2 * STALE_TEMP_SECONDS)
    assert blobs.remove_stale_temp_files() == 1
    assert (forgotten.exists(), recent.exists()) == (False, True)


def test_loading_a_session_clears_the_attachments_a_crash_left_half_written(
    tmp_path: Path,
) -> None:
    store = SessionStore(tmp_path / "sessions")
    store.open()
    store.create("s1")
    store.event_log("s1").append([Event.user_message(1, content="hi")])
    torn = torn_temp(store.directory("s1"), DATA, mtime=PROCESS_STARTED - 1)
    store.remove_stale_temp_files("s1")
    assert not torn.exists()


def test_no_attachments_folder_is_made_for_a_session_that_is_not_there(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        AttachmentFiles(tmp_path / "sessions" / "gone").put(DATA)
    assert not (tmp_path / "sessions").exists()


# --- real crashes ----------------------------------------------------------------------------


def test_a_process_killed_in_the_middle_of_writing_a_large_blob_leaves_no_blob(
    tmp_path: Path,
) -> None:
    folder = session_dir(tmp_path)
    with Child("torn", str(folder), str(8 << 20)) as child:
        sha = child.line("TORN").split()[1]
        child.kill()
    attachments = folder / ATTACHMENTS_DIRNAME
    assert [p.suffix for p in attachments.iterdir()] == [".tmp"]  # half of it, under a temp name

    restarted = AttachmentFiles(folder, started=time.time())  # the process after the crash
    assert not restarted.has(sha)
    assert restarted.hashes() == []
    assert restarted.remove_stale_temp_files() == 1
    assert list(attachments.iterdir()) == []


def test_kills_at_random_moments_of_large_puts_leave_each_blob_whole_or_absent(
    tmp_path: Path,
) -> None:
    folder = session_dir(tmp_path)
    attachments = folder / ATTACHMENTS_DIRNAME
    acknowledged: list[str] = []
    rng = random.Random(36)
    for cycle in range(6):
        with Child("files", str(folder), str(cycle)) as child:
            acknowledged.extend(child.line("PUT").split()[1] for _ in range(1 + cycle % 3))
            time.sleep(rng.uniform(0, 0.03))  # the kill's moment: hashing, writing, fsync…
            child.kill()
        for path in attachments.iterdir():  # before any cleanup, after every kill
            if path.suffix != ".tmp":
                assert hashlib.sha256(path.read_bytes()).hexdigest() == path.name, "torn"

    restarted = AttachmentFiles(folder, started=time.time())
    restarted.remove_stale_temp_files()
    assert set(acknowledged) <= set(restarted.hashes())
    assert sorted(p.name for p in attachments.iterdir()) == restarted.hashes()  # no temp left
