"""The workspace lock in one process: flock is per open file, so two acquisitions conflict."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from duragent.store.serve_lock import (
    LOCK_FILENAME,
    SESSIONS_LOCK_FILENAME,
    ServeLock,
    WorkspaceBusyError,
    read_holder,
)


def test_a_second_lock_on_the_same_workspace_names_the_holder(tmp_path: Path) -> None:
    ws = tmp_path / ".duragent"
    first = ServeLock.acquire(ws, ws / "sessions")
    first.publish("http://127.0.0.1:8123")
    with pytest.raises(WorkspaceBusyError) as caught:
        ServeLock.acquire(ws, ws / "sessions")
    message = str(caught.value)
    assert f"workspace {ws.resolve()} is already served by PID {os.getpid()}" in message
    assert "at http://127.0.0.1:8123" in message
    first.release()
    ServeLock.acquire(ws, ws / "sessions").release()  # free again once released


def test_a_symlinked_path_to_the_workspace_meets_the_same_lock(tmp_path: Path) -> None:
    ws = tmp_path / "real" / ".duragent"
    ws.mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    held = ServeLock.acquire(ws, ws / "sessions")
    try:
        with pytest.raises(WorkspaceBusyError):
            ServeLock.acquire(tmp_path / "link" / ".duragent", tmp_path / "link/.duragent/sessions")
    finally:
        held.release()


def test_a_sessions_directory_outside_the_workspace_is_locked_too(tmp_path: Path) -> None:
    shared = tmp_path / "shared-sessions"
    held = ServeLock.acquire(tmp_path / "a" / ".duragent", shared)
    try:
        assert (shared / SESSIONS_LOCK_FILENAME).exists()
        with pytest.raises(WorkspaceBusyError) as caught:
            ServeLock.acquire(tmp_path / "b" / ".duragent", shared)
        assert str(shared.resolve()) in str(caught.value)
        # the failed attempt released what it had taken: workspace b is free
        assert read_holder(tmp_path / "b" / ".duragent" / LOCK_FILENAME) is None
    finally:
        held.release()


def test_read_holder_tells_a_held_lock_from_a_stale_file(tmp_path: Path) -> None:
    ws = tmp_path / ".duragent"
    held = ServeLock.acquire(ws, ws / "sessions")
    holder = read_holder(ws / LOCK_FILENAME)
    assert holder is not None
    assert holder.pid == os.getpid()
    assert holder.address is None  # not bound yet
    held.publish("http://127.0.0.1:9")
    assert (h := read_holder(ws / LOCK_FILENAME)) is not None
    assert h.address == "http://127.0.0.1:9"
    held.release()
    assert (ws / LOCK_FILENAME).exists()
    assert read_holder(ws / LOCK_FILENAME) is None
    assert read_holder(tmp_path / "missing.lock") is None
