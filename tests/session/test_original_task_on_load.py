"""A loaded session pins the first user message of its whole conversation, archive included."""

from __future__ import annotations

from pathlib import Path

from duragent.session import NewSession, RegistrySettings, SessionRegistry
from duragent.store import SessionStore
from duragent.store.snapshot_file import SnapshotFile
from tests.reference_sessions import FIRST_REPLAYED, TASK, reference_sessions


def registry(root: Path) -> SessionRegistry:
    return SessionRegistry(SessionStore(root), RegistrySettings(ask_timeout=10))


async def _task(root: Path, session_id: str) -> str | None:
    reg = registry(root)
    await reg.open()
    try:
        return (await reg.handle(session_id).memory()).task
    finally:
        await reg.aclose()


async def test_a_session_from_the_reference_pins_its_first_message_not_the_first_replayed(
    tmp_path: Path,
) -> None:
    (sid,) = reference_sessions(tmp_path)
    task = await _task(tmp_path, sid)
    assert task == TASK
    assert task != FIRST_REPLAYED


async def test_a_snapshot_of_ours_without_its_task_finds_it_in_the_archive(
    tmp_path: Path,
) -> None:
    """A state.yaml written before the summaries tier had a task, its start rolled over."""
    reg = registry(tmp_path)
    await reg.open()
    try:
        sid = await reg.create(NewSession(agent="a"))
        for i in range(40):
            await reg.handle(sid).add_user_message(f"m{i}")
            await reg.handle(sid).add_assistant_response(f"r{i}")
    finally:
        await reg.aclose()
    files = SnapshotFile(tmp_path / sid)
    snapshot = files.read()
    assert snapshot is not None
    assert snapshot.checkpoint_seq > 0
    assert '"m0"' in (tmp_path / sid / "events.archive.jsonl").read_text()
    snapshot.task = None
    files.write(snapshot)
    assert await _task(tmp_path, sid) == "m0"
    written = files.read()
    assert written is not None
    assert written.task == "m0"  # kept: the search is not repeated
