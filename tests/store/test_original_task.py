"""A session's original task is its first user message, wherever that message is now."""

from __future__ import annotations

from pathlib import Path

from duragent.core.events import Event
from duragent.core.messages import Message
from duragent.core.snapshot import SessionSnapshot
from duragent.store.event_log import EventLog
from duragent.store.original_task import original_task
from duragent.store.snapshot_file import SnapshotFile
from tests.reference_sessions import TASK, reference_sessions


def _reference(tmp_path: Path) -> tuple[EventLog, SessionSnapshot]:
    (sid,) = reference_sessions(tmp_path)
    snapshot = SnapshotFile(tmp_path / sid).read()
    assert snapshot is not None
    return EventLog(tmp_path / sid), snapshot


def test_the_task_of_a_snapshot_replayed_from_a_checkpoint_is_the_archives_first_message(
    tmp_path: Path,
) -> None:
    log, snapshot = _reference(tmp_path)
    assert original_task(log, snapshot) == TASK


def test_what_the_archive_holds_after_its_first_user_message_does_not_matter(
    tmp_path: Path,
) -> None:
    log, snapshot = _reference(tmp_path)
    with log.archive_path.open("ab") as archive:
        archive.write(b'{"seq":99,"type":"user_message","content":"torn')  # a crash mid-append
    assert original_task(log, snapshot) == TASK


def test_without_an_archive_the_live_log_before_the_checkpoint_has_it(tmp_path: Path) -> None:
    log, snapshot = _reference(tmp_path)
    everything = log.archive_path.read_bytes() + log.path.read_bytes()
    log.archive_path.unlink()
    log.path.write_bytes(everything)  # compaction disabled: one log
    assert original_task(log, snapshot) == TASK


def test_with_the_early_events_discarded_the_conversation_has_the_oldest_known(
    tmp_path: Path,
) -> None:
    log, snapshot = _reference(tmp_path)
    log.archive_path.unlink()  # the reference's default: discard
    assert original_task(log, snapshot) == "Start with the invoices schema"


def test_a_snapshot_that_holds_its_task_keeps_it(tmp_path: Path) -> None:
    log, snapshot = _reference(tmp_path)
    snapshot.task = "as recorded"
    assert original_task(log, snapshot) == "as recorded"


def test_a_log_replayed_from_its_start_needs_no_search(tmp_path: Path) -> None:
    log = EventLog(tmp_path)
    log.append([Event.user_message(1, content="first")])
    snapshot = SessionSnapshot(
        session_id="s", agent="a", created_at="t", updated_at="t", checkpoint_seq=0
    )
    assert original_task(log, snapshot) is None  # the replay meets it


def test_steering_is_not_a_task(tmp_path: Path) -> None:
    snapshot = SessionSnapshot(
        session_id="s",
        agent="a",
        created_at="t",
        updated_at="t",
        checkpoint_seq=4,
        conversation=[Message.user("[steering] check the exit code"), Message.user("real")],
    )
    assert original_task(EventLog(tmp_path), snapshot) == "real"
