"""The reference's sessions are converted at first start; state.json is set aside, kept."""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import sys
from pathlib import Path

from duragent.store import SessionStore
from duragent.store.fileops import OS_FILE_OPS, OsFileOps
from duragent.store.reference_migration import migration_status
from duragent.store.snapshot_file import SnapshotFile
from tests.polling import eventually
from tests.reference_sessions import (
    CHAT,
    PENDING_CALL,
    SESSION_ID,
    TASK,
    reference_sessions,
)

ROOT = Path(__file__).resolve().parents[2]


class SetAsideFails(OsFileOps):
    """The disk refuses the rename of ``state.json`` (the step after ``state.yaml``)."""

    def replace(self, source: Path, target: Path) -> None:
        if source.name == "state.json":
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(source))
        super().replace(source, target)


def test_opening_the_store_converts_a_reference_session_and_sets_its_state_json_aside(
    tmp_path: Path,
) -> None:
    (sid,) = reference_sessions(tmp_path)
    original = (tmp_path / sid / "state.json").read_bytes()
    SessionStore(tmp_path).open()
    folder = tmp_path / sid
    assert not (folder / "state.json").exists()  # the reference no longer lists it
    assert (folder / "state.json.migrated").read_bytes() == original  # kept as it was
    snapshot = SnapshotFile(folder).read()
    assert snapshot is not None
    assert (folder / "state.yaml").read_text().startswith("schema_version: 3\n")
    assert snapshot.task == TASK  # the archive's first user message
    assert (snapshot.checkpoint_seq, snapshot.last_event_seq) == (7, 11)
    assert snapshot.pending_approval is not None
    assert snapshot.pending_approval["call_id"] == PENDING_CALL
    assert "messages" not in snapshot.pending_approval  # the loop's copy stays in the original
    assert migration_status(tmp_path).migrated == [sid]


def test_a_migrated_session_keeps_its_chat(tmp_path: Path) -> None:
    (sid,) = reference_sessions(tmp_path)
    store = SessionStore(tmp_path)
    store.open()
    assert store.chats.get(CHAT) == sid


def test_a_failure_between_writing_state_yaml_and_setting_state_json_aside_is_resumed(
    tmp_path: Path,
) -> None:
    (sid,) = reference_sessions(tmp_path)
    SessionStore(tmp_path, SetAsideFails()).open()
    folder = tmp_path / sid
    assert (folder / "state.json").exists()  # not set aside: still to do
    snapshot = SnapshotFile(folder).read()  # state.yaml, read first
    assert snapshot is not None
    assert snapshot.task == TASK
    assert migration_status(tmp_path).waiting == [sid]
    SessionStore(tmp_path).open()  # the next start finishes
    assert not (folder / "state.json").exists()
    assert (folder / "state.json.migrated").exists()
    assert not (folder / "state.json.migrated.2").exists()


def test_a_task_taken_from_the_first_replayed_message_is_corrected(tmp_path: Path) -> None:
    """What a duragent did before: read state.json, wrote state.yaml, left state.json."""
    (sid,) = reference_sessions(tmp_path)
    folder = tmp_path / sid
    files = SnapshotFile(folder)
    legacy = files.read_legacy()
    assert legacy is not None
    legacy.schema_version = 3
    legacy.task = "Drop invoices.legacy"
    files.write(legacy)
    SessionStore(tmp_path).open()
    snapshot = files.read()
    assert snapshot is not None
    assert snapshot.task == TASK
    assert not (folder / "state.json").exists()


def test_an_unreadable_state_json_is_left_where_it_is(tmp_path: Path) -> None:
    (sid,) = reference_sessions(tmp_path)
    (tmp_path / sid / "state.json").write_text("{not json")
    SessionStore(tmp_path).open()  # the other sessions start; this one is quarantined on use
    assert (tmp_path / sid / "state.json").read_text() == "{not json"
    assert not (tmp_path / sid / "state.yaml").exists()


def test_a_workspace_without_reference_sessions_reports_nothing(tmp_path: Path) -> None:
    SessionStore(tmp_path).open()
    status = migration_status(tmp_path)
    assert (status.migrated, status.waiting) == ([], [])


def _every_session_reads(root: Path, ids: list[str]) -> None:
    for sid in ids:
        snapshot = SnapshotFile(root / sid, OS_FILE_OPS).read()
        assert snapshot is not None, sid
        assert snapshot.session_id == sid
        if (root / sid / "state.yaml").exists():
            assert snapshot.task == TASK, sid


def _count(root: Path, ids: list[str], name: str) -> int:
    return sum((root / sid / name).exists() for sid in ids)


def _set_aside_twice(root: Path) -> list[Path]:
    return list(root.glob("*/state.json.migrated.*"))


CHILD = """\
import sys, pathlib
from duragent.store import SessionStore
SessionStore(pathlib.Path(sys.argv[1])).open()
"""
"""What a start does first: open the store (the migration runs there)."""


async def _start_and_kill(root: Path, ids: list[str], name: str, reached: int) -> None:
    """Start a child that opens the store; SIGKILL it once ``reached`` folders have ``name``."""
    paths = [str(ROOT), os.environ.get("PYTHONPATH")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, paths))}
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", CHILD, str(root), env=env)
    try:
        await eventually(lambda: _count(root, ids, name) >= reached or proc.returncode is not None)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGKILL)
        await proc.wait()


async def test_a_migration_killed_at_any_point_leaves_every_session_readable_and_resumes(
    tmp_path: Path,
) -> None:
    """A real child process runs the start's migration and is SIGKILLed twice mid-way."""
    ids = reference_sessions(tmp_path, copies=150)
    for name in ("state.yaml", "state.json.migrated"):  # in step 1, then in step 3
        await _start_and_kill(tmp_path, ids, name, 40)
        _every_session_reads(tmp_path, ids)
        assert _count(tmp_path, ids, "state.yaml") > 0  # the child did run
    SessionStore(tmp_path).open()
    _every_session_reads(tmp_path, ids)
    status = migration_status(tmp_path)
    assert (len(status.migrated), status.waiting) == (len(ids), [])
    assert not _set_aside_twice(tmp_path)
    store = SessionStore(tmp_path)
    store.open()
    assert store.chats.get(CHAT) == max(ids)  # the chat's newest session
    assert SESSION_ID in ids
