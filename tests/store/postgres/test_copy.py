"""A workspace on files moves to PostgreSQL without losing a session, and the proof is checked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from duragent.cli.main import app
from duragent.core.events import Event
from duragent.core.messages import Message
from duragent.core.snapshot import SessionSnapshot
from duragent.store import SessionStore
from duragent.store.copy import copy_sessions, history_differences
from duragent.store.postgres import PostgresSessionStore
from tests.store import postgres_db


def snapshot(sid: str, last: int) -> SessionSnapshot:
    return SessionSnapshot(
        session_id=sid,
        agent="assistant",
        created_at="2026-11-24T00:00:00.000Z",
        updated_at="2026-11-24T00:01:00.000Z",
        last_event_seq=last,
        checkpoint_seq=last,
        conversation=[Message.user(f"hello {sid} ✓"), Message.assistant("hi")],
    )


def photo(sid: str) -> bytes:
    return f"\x89PNG photo of {sid}\x00".encode() * 1000


def file_workspace(sessions: Path) -> SessionStore:
    """Sessions as a real workspace has them: archived, discarded, fresh, quarantined."""
    store = SessionStore(sessions)
    store.open()
    for n in range(1, 6):
        sid = f"01S{n}"
        store.create(sid)
        log = store.event_log(sid)
        log.append([Event.user_message(i, content=f"{sid} m{i} 你好") for i in range(1, 4 * n)])
        if n % 2 == 0:
            log.roll_over(2 * n, archive=n != 4)  # archive mode, and one discard
        log.close()
        store.snapshot(sid).write(snapshot(sid, 4 * n - 1))
        outputs = store.saved_outputs(sid)
        outputs.save(outputs.new_id(), f"full output of {sid}\n" * n)
        if n % 2:
            store.attachments(sid).put(photo(sid))
        store.chats.set(("telegram", str(n), "assistant"), sid)
    store.create("01SEMPTY")  # made room for, nothing written
    store.create("01SBAD")
    store.event_log("01SBAD").append([Event.user_message(1, content="x")])
    store.quarantine("01SBAD", "a test")
    return store


@pytest.fixture
def target() -> Iterator[PostgresSessionStore]:
    with postgres_db.fresh_schema() as schema, postgres_db.database(schema) as db:
        store = PostgresSessionStore(db, node_id="copier")
        store.open()
        yield store


def test_every_session_moves_with_its_whole_history(
    tmp_path: Path, target: PostgresSessionStore
) -> None:
    source = file_workspace(tmp_path / "sessions")
    report = copy_sessions(source, target)
    assert report.ok, report
    assert sorted(report.copied) == source.list_ids() == target.list_ids()
    assert report.quarantined == ["01SBAD"]
    for sid in source.list_ids():  # compared again here, independently of the report
        assert history_differences(source, target, sid) == []
    assert [e.seq for e in target.event_log("01S2").read_archive()] == [1, 2, 3, 4]
    assert [e.seq for e in target.event_log("01S2").read()[0]] == [5, 6, 7]
    assert target.event_log("01S4").read_archive() == []  # discarded stays discarded
    assert dict(target.chats.items()) == dict(source.chats.items())
    blobs = target.attachments("01S3")
    assert [blobs.read(sha) for sha in blobs.hashes()] == [photo("01S3")]
    assert target.attachments("01S2").hashes() == []

    assert report.unclean_source == {}  # a log that starts after its archive misses nothing

    again = copy_sessions(source, target)  # an interrupted copy can simply be run again
    assert again.ok
    assert sorted(again.already_there) == source.list_ids()


def test_a_seq_missing_from_both_the_archive_and_the_log_is_reported(
    tmp_path: Path, target: PostgresSessionStore
) -> None:
    source = SessionStore(tmp_path / "sessions")
    source.open()
    source.create("01SGAP")
    log = source.event_log("01SGAP")
    log.append([Event.user_message(i, content=f"m{i}") for i in range(1, 5)])
    log.roll_over(2, archive=True)  # 1-2 archived, 3-4 live
    log.append([Event.user_message(i, content=f"m{i}") for i in range(7, 9)])  # 5-6 lost
    log.close()
    report = copy_sessions(source, target)
    assert report.unclean_source == {"01SGAP": "missing seqs 5–6"}


def test_a_target_session_with_another_history_is_a_conflict_left_alone(
    tmp_path: Path, target: PostgresSessionStore
) -> None:
    source = file_workspace(tmp_path / "sessions")
    target.create("01S1")
    target.event_log("01S1").append([Event.user_message(1, content="something else")])
    report = copy_sessions(source, target)
    assert report.conflicts == ["01S1"]
    assert not report.ok
    assert target.event_log("01S1").read()[0][0].data["content"] == "something else"


def test_the_cli_migrates_and_copies_a_workspace(tmp_path: Path) -> None:
    with postgres_db.fresh_schema() as schema:
        file_workspace(tmp_path / ".duragent" / "sessions")
        config = tmp_path / "duragent.yaml"
        config.write_text(
            f"store:\n  backend: postgres\n  dsn: ${{TEST_PG_DSN}}\n  schema: {schema}\n"
        )
        env = {"TEST_PG_DSN": postgres_db.DSN}
        runner = CliRunner()
        migrated = runner.invoke(app, ["store", "migrate", "-c", str(config)], env=env)
        assert migrated.exit_code == 0, migrated.output
        assert (
            f"schema {schema}: version 7; applied: 1 initial, 2 saved_outputs, "
            "3 exactly_once, 4 nodes, 5 chats_quarantine, 6 attachments, 7 preview_records"
            in migrated.output
        )
        copied = runner.invoke(
            app, ["store", "copy", "--from", "file", "--to", "postgres", "-c", str(config)], env=env
        )
        assert copied.exit_code == 0, copied.output
        assert "copied 6 sessions" in copied.output
        assert "quarantined sessions not copied (restore them first): 01SBAD" in copied.output
        again = runner.invoke(app, ["store", "migrate", "-c", str(config)], env=env)
        assert "applied: none (up to date)" in again.output


def test_the_cli_copies_the_schedules_with_their_run_logs(tmp_path: Path) -> None:
    from duragent.store.postgres import PostgresRunLog, PostgresSchedules
    from duragent.store.schedule_files import RunLogFiles, ScheduleFiles

    directory = tmp_path / ".duragent" / "schedules"
    ScheduleFiles(directory).put("sched_daily", {"id": "sched_daily", "agent": "helper"})
    runs = RunLogFiles(directory / "runs")
    runs.append("sched_daily", {"ts": 1, "status": "running", "due": 1000, "attempt": 1})
    runs.append("sched_daily", {"ts": 2, "status": "ok", "due": 1000})
    declared = "decl_helper_digest"  # in agent.yaml: no document, its runs are its cursor
    runs.append(declared, {"ts": 3, "status": "ok", "due": 2000})
    with postgres_db.fresh_schema() as schema:
        config = tmp_path / "duragent.yaml"
        config.write_text(
            f"store:\n  backend: postgres\n  dsn: {postgres_db.DSN!r}\n  schema: {schema}\n"
        )
        command = ["store", "copy", "--from", "file", "--to", "postgres", "-c", str(config)]
        copied = CliRunner().invoke(app, command)
        assert copied.exit_code == 0, copied.output
        assert "copied 1 schedules with their run logs, 0 already there" in copied.output
        again = CliRunner().invoke(app, command)
        assert "the runs of 1 schedules declared in agent.yaml" in copied.output
        assert "copied 0 schedules with their run logs, 1 already there" in again.output
        assert "the runs of 0 schedules declared in agent.yaml" in again.output  # not twice
        with postgres_db.database(schema) as db:
            db.open()
            assert PostgresSchedules(db).get("sched_daily") == {
                "id": "sched_daily",
                "agent": "helper",
            }
            assert [r["status"] for r in PostgresRunLog(db).recent("sched_daily", 10)] == [
                "running",
                "ok",
            ]
            assert PostgresRunLog(db).recent(declared, 10) == [
                {"ts": 3, "status": "ok", "due": 2000}
            ]
            assert PostgresRunLog(db).logged() == [declared, "sched_daily"]


def test_the_cli_refuses_to_copy_while_a_server_holds_the_workspace(tmp_path: Path) -> None:
    from duragent.store.serve_lock import ServeLock

    workspace = tmp_path / ".duragent"
    file_workspace(workspace / "sessions")
    config = tmp_path / "duragent.yaml"
    config.write_text(f"store:\n  dsn: {postgres_db.DSN!r}\n")
    lock = ServeLock.acquire(workspace, workspace / "sessions")
    try:
        result = CliRunner().invoke(
            app, ["store", "copy", "--from", "file", "--to", "postgres", "-c", str(config)]
        )
    finally:
        lock.release()
    assert result.exit_code == 1
    assert "is already served by PID" in result.output


def test_a_workspace_copied_there_and_back_is_the_same(
    tmp_path: Path, target: PostgresSessionStore
) -> None:
    source = file_workspace(tmp_path / "sessions")
    assert copy_sessions(source, target).ok
    back = SessionStore(tmp_path / "back")
    back.open()
    report = copy_sessions(target, back)
    assert report.ok, report
    assert back.list_ids() == source.list_ids()
    for sid in source.list_ids():
        assert history_differences(source, back, sid) == []


def test_an_attachment_missing_in_the_target_is_a_difference(
    tmp_path: Path, target: PostgresSessionStore
) -> None:
    source = file_workspace(tmp_path / "sessions")
    assert copy_sessions(source, target).ok
    source.attachments("01S1").put(b"sent after the copy")
    assert history_differences(source, target, "01S1") == ["the attachments differ"]
