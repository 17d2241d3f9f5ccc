"""The bench's store view: the files read as before, the same values from PostgreSQL after a
real ``duragent store copy``, and run logs merged across the switch without a line twice."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bench.strangers.judge import _kept_on_node, _schedules_by_chat
from bench.strangers.judge_chats import attachment
from bench.year.schedule import read_lines
from bench.year.store_view import FileView, SwitchedView, merge_runs
from duragent.cli.main import app
from duragent.core.events import Event
from duragent.core.messages import Message
from duragent.core.snapshot import SessionSnapshot
from duragent.scheduler.model import Cron, Destination, MessagePayload, Schedule, schedule_document
from duragent.store import SessionStore
from duragent.store.schedule_files import RunLogFiles, ScheduleFiles
from duragent.testing.campaign_workspace import recorded_message_ids

S1, S2, S3 = "session_01AAA", "session_01BBB", "session_01CCC"
DIGEST, MADE = "decl_ops_digest", "sched_01MADE"
PHOTO = b"\x89PNG a photo\x00" * 300


def snapshot(sid: str, last: int, chat: str | None) -> SessionSnapshot:
    return SessionSnapshot(
        session_id=sid,
        agent="dm",
        created_at="2026-01-01T00:00:00.000Z",
        updated_at="2026-01-01T00:01:00.000Z",
        last_event_seq=last,
        checkpoint_seq=last,
        conversation=[Message.user(f"hello {sid}"), Message.assistant("hi")],
        gateway="telegram" if chat else None,
        gateway_chat_id=chat,
    )


def workspace(root: Path) -> FileView:
    """A small workspace, written by the product's file-store classes: a Telegram DM with an
    archived start, an attachment and a schedule made from it; a group session not yet
    snapshotted (its chat is its first event's); an HTTP session (no chat)."""
    store = SessionStore(root / ".duragent" / "sessions")
    store.open()
    store.create(S1)
    log = store.event_log(S1)
    start = Event.session_start(
        1, agent="dm", on_disconnect="pause", gateway="telegram", gateway_chat_id="101"
    )
    said = [
        Event.user_message(seq, content=f"m{seq}", platform_message_id=str(5000 + seq))
        for seq in range(2, 6)
    ]
    log.append([start, *said])
    log.roll_over(3, archive=True)  # ids 5002, 5003 only in the archive
    log.close()
    store.snapshot(S1).write(snapshot(S1, 5, "101"))
    store.attachments(S1).put(PHOTO)
    store.chats.set(("telegram", "101", "dm"), S1)
    store.create(S2)
    log = store.event_log(S2)
    log.append(
        [
            Event.session_start(
                1, agent="group", on_disconnect="pause", gateway="telegram", gateway_chat_id="-202"
            ),
            Event.silent_message(2, content="chatter", sender_id="7", platform_message_id="6001"),
        ]
    )
    log.close()
    store.create(S3)
    store.event_log(S3).append([Event.session_start(1, agent="dm", on_disconnect="pause")])
    store.snapshot(S3).write(snapshot(S3, 1, None))
    schedules = root / ".duragent" / "schedules"
    made = Schedule(
        id=MADE,
        agent="dm",
        timing=Cron("0 9 * * *", "Europe/Berlin"),
        payload=MessagePayload("stand-up ✓"),
        created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        destination=Destination("telegram", "101"),
        created_by_session=S1,
    )
    ScheduleFiles(schedules).put(MADE, schedule_document(made))
    ScheduleFiles(schedules).put("sched_01OLD", schedule_document(made.with_status("cancelled")))
    runs = RunLogFiles(schedules / "runs")
    runs.append(DIGEST, {"status": "registered", "cursor": 1_000, "reason": "new"})
    for due in (4_000, 8_000):
        runs.append(DIGEST, {"status": "running", "due": due, "attempt": 1, "ts": due + 5})
        runs.append(DIGEST, {"status": "ok", "due": due, "ts": due + 9})
    runs.append(MADE, {"status": "running", "due": 9_000, "attempt": 1, "ts": 9_001})
    return FileView(root)


def test_the_file_view_reads_what_the_readers_read_before(tmp_path: Path) -> None:
    view = workspace(tmp_path)
    logs = tmp_path / ".duragent" / "schedules" / "runs"
    with (logs / "decl_ops_torn.jsonl").open("w") as f:
        f.write('{"status":"ok","due":1}\n{"status":"runn')  # a kill mid-write
    lasts = view.last_runs([DIGEST, "decl_ops_torn", "decl_ops_none"])
    assert lasts == {
        DIGEST: {"status": "ok", "due": 8_000, "ts": 8_009},
        "decl_ops_torn": {},  # the brake holds the clock for this tick
        "decl_ops_none": None,
    }
    assert view.runs(DIGEST) == read_lines(logs / f"{DIGEST}.jsonl")
    assert view.runs("decl_ops_torn") == [{"status": "ok", "due": 1}]
    assert view.session_chats() == {S1: 101, S2: -202, S3: None}
    assert view.recorded_message_ids() == recorded_message_ids(tmp_path)
    assert view.recorded_message_ids() == {"5002", "5003", "5004", "5005", "6001"}
    assert sorted(view.made_schedules()) == [MADE, "sched_01OLD"]
    assert _schedules_by_chat(view.made_schedules()) == Counter({"101": 1})
    assert view.db_bytes() == 0
    media = tmp_path / ".duragent" / "media" / "telegram"
    media.mkdir(parents=True)
    (media / "abc.jpg").write_bytes(b"x" * 70)
    files = tmp_path / ".duragent" / "agents" / "dm" / "files" / S1
    files.mkdir(parents=True)
    (files / "ledger.txt").write_bytes(b"y" * 11)
    old_total = sum(p.stat().st_size for p in (tmp_path / ".duragent").rglob("*") if attachment(p))
    assert view.attachment_bytes() == len(PHOTO)
    assert view.attachment_bytes() + _kept_on_node(tmp_path) == old_total == len(PHOTO) + 81


def test_run_logs_merge_the_copied_stretch_once() -> None:
    a, b, c, d = ({"n": n} for n in range(4))
    assert merge_runs([a, b, c], [b, c, d]) == [a, b, c, d]  # copied b, c
    assert merge_runs([a, b, c], [c, d]) == [a, b, c, d]  # the copy pruned b
    assert merge_runs([a, b], [c, d]) == [a, b, c, d]  # nothing copied (finding 1)
    assert merge_runs([a, b], [a, b, b]) == [a, b, b]  # a line written again stays
    assert merge_runs([], [a]) == [a]
    assert merge_runs([a], []) == [a]


@pytest.fixture
def copied(tmp_path: Path) -> Iterator[tuple[FileView, Any, str]]:
    """The workspace, copied into a fresh schema by the real CLI: (files, PgView, schema)."""
    postgres_db = pytest.importorskip("tests.store.postgres_db")
    from bench.year.store_view_pg import PgView

    files = workspace(tmp_path)
    with postgres_db.fresh_schema() as schema:
        config = tmp_path / "duragent.yaml"
        config.write_text(
            f"store:\n  backend: postgres\n  dsn: {postgres_db.DSN!r}\n  schema: {schema}\n"
        )
        command = ["store", "copy", "--from", "file", "--to", "postgres", "-c", str(config)]
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 0, result.output
        assert "copied 3 sessions" in result.output
        view = PgView(postgres_db.DSN, schema)
        try:
            yield files, view, schema
        finally:
            view.close()


def test_postgres_gives_what_the_files_give_after_a_real_copy(
    copied: tuple[FileView, Any, str],
) -> None:
    files, pg, _schema = copied
    ids = [DIGEST, MADE, "decl_ops_none"]
    assert pg.last_runs(ids) == files.last_runs(ids)
    for schedule_id in ids:
        assert pg.runs(schedule_id) == files.runs(schedule_id)
    assert pg.made_schedules() == files.made_schedules()
    assert pg.session_chats() == files.session_chats() == {S1: 101, S2: -202, S3: None}
    assert pg.recorded_message_ids() == files.recorded_message_ids()
    assert pg.attachment_bytes() == files.attachment_bytes() == len(PHOTO)
    assert pg.db_bytes() > len(PHOTO) > files.db_bytes() == 0
    import psycopg

    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):  # it reads, never writes
        pg._rows("DELETE FROM schedule_runs")


def test_the_switched_view_reads_files_then_postgres_with_logs_merged(
    copied: tuple[FileView, Any, str],
) -> None:
    from duragent.store.postgres import PostgresRunLog
    from tests.store.postgres_db import database

    files, pg, schema = copied
    pg.cache_seconds = 0.2
    before_switch = files.runs(DIGEST)
    RunLogFiles(files.schedules / "runs").append("decl_ops_late", {"status": "ok", "due": 1})
    view = SwitchedView(files, pg)
    assert view.runs(DIGEST) == before_switch
    assert view.last_runs([DIGEST]) == files.last_runs([DIGEST])
    view.switch()
    assert view.last_runs([DIGEST]) == {DIGEST: before_switch[-1]}  # copied: the same line
    with database(schema) as db:
        db.open()
        runs = PostgresRunLog(db)
        runs.append(DIGEST, {"status": "registered", "cursor": 1_000, "reason": "new"})
        runs.append(DIGEST, {"status": "running", "due": 12_000, "attempt": 1, "ts": 12_005})
    assert view.last_runs([DIGEST])[DIGEST] == before_switch[-1]  # cached a while
    time.sleep(0.25)
    assert view.last_runs([DIGEST])[DIGEST] == {
        "status": "running",
        "due": 12_000,
        "attempt": 1,
        "ts": 12_005,
    }
    merged = view.runs(DIGEST)
    assert merged[: len(before_switch)] == before_switch
    assert merged[len(before_switch) :] == [
        {"status": "registered", "cursor": 1_000, "reason": "new"},  # a second one: shown
        {"status": "running", "due": 12_000, "attempt": 1, "ts": 12_005},
    ]
    assert len(pg.runs(DIGEST)) == len(before_switch) + 2  # the copy's lines counted once
    late = view.last_runs(["decl_ops_late"])  # never copied: the file's line stands
    assert late == {"decl_ops_late": {"status": "ok", "due": 1}}
    assert view.runs("decl_ops_late") == [{"status": "ok", "due": 1}]
    assert view.session_chats() == pg.session_chats()
    assert view.db_bytes() > 0
