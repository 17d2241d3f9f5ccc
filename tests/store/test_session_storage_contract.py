"""The ``SessionStorage`` contract: one suite, run against every backend.

What the session layer relies on, stated once: a backend that passes this can carry the
registry, the actors and the journal. Each test runs for the file backend (``SessionStore``),
the in-memory one (``MemorySessionStore``) and PostgreSQL (``PostgresSessionStore``, on a
fresh schema of the test database: ``tests/store/postgres_db.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from duragent.core.events import Event
from duragent.core.messages import Message
from duragent.core.snapshot import SessionSnapshot, SessionStatus
from duragent.store import MemorySessionStore, SessionStorage, SessionStore

Backend = Callable[[Path], SessionStorage]

BACKENDS: dict[str, Backend] = {
    "files": SessionStore,
    "memory": lambda _root: MemorySessionStore(),
}


@pytest.fixture(params=[*sorted(BACKENDS), "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionStorage]:
    if request.param != "postgres":
        made = BACKENDS[request.param](tmp_path / "sessions")
        made.open()
        yield made
        return
    from duragent.store.postgres import PostgresSessionStore
    from tests.store import postgres_db  # skips without the driver or a server

    with postgres_db.fresh_schema() as schema, postgres_db.database(schema) as db:
        pg = PostgresSessionStore(db, node_id="test-node")
        pg.open()
        yield pg


def user(seq: int, text: str = "hi") -> Event:
    return Event.user_message(seq, content=text)


def seqs(events: list[Event]) -> list[int]:
    return [e.seq for e in events]


def snapshot(session_id: str, **overrides: object) -> SessionSnapshot:
    fields: dict[str, object] = {
        "session_id": session_id,
        "agent": "assistant",
        "created_at": "2026-11-24T00:00:00.000Z",
        "updated_at": "2026-11-24T00:01:00.000Z",
        "last_event_seq": 3,
        "checkpoint_seq": 2,
        "conversation": [Message.user("hello ✓"), Message.assistant("hi")],
    }
    fields.update(overrides)
    return SessionSnapshot(**fields)  # type: ignore[arg-type]


def created(store: SessionStorage, session_id: str = "s1") -> str:
    store.create(session_id)
    return session_id


# --- sessions ------------------------------------------------------------------------------


def test_a_created_session_is_listed_and_exists_once_it_has_events(store: SessionStorage) -> None:
    sid = created(store)
    assert store.list_ids() == [sid]
    assert not store.exists(sid)  # made room for, nothing written yet
    store.event_log(sid).append([user(1)])
    assert store.exists(sid)


def test_an_id_cannot_be_created_twice(store: SessionStorage) -> None:
    sid = created(store)
    store.event_log(sid).append([user(1)])
    with pytest.raises(FileExistsError):
        store.create(sid)


@pytest.mark.parametrize("bad", ["", "a/b", ".hidden", "_quarantine"])
def test_an_id_that_could_escape_the_store_is_refused(store: SessionStorage, bad: str) -> None:
    with pytest.raises(ValueError, match="invalid session id"):
        store.create(bad)


def test_ids_are_listed_sorted(store: SessionStorage) -> None:
    for sid in ("s3", "s1", "s2"):
        created(store, sid)
    assert store.list_ids() == ["s1", "s2", "s3"]


def test_a_discarded_new_session_is_gone(store: SessionStorage) -> None:
    sid = created(store)
    store.discard_new(sid)
    assert store.list_ids() == []


def test_a_deleted_session_is_gone_with_its_chats(store: SessionStorage) -> None:
    sid = created(store)
    store.event_log(sid).append([user(1)])
    store.chats.set(("http", "c1", "a"), sid)
    store.delete(sid)
    assert not store.exists(sid)
    assert store.chats.get(("http", "c1", "a")) is None
    store.delete(sid)  # missing is fine


# --- the event log -------------------------------------------------------------------------


def test_appended_events_read_back_in_order_after_a_seq(store: SessionStorage) -> None:
    log = store.event_log(created(store))
    log.append([user(1), user(2)])
    log.append([user(3, "héllo 你好")])
    events, report = log.read()
    assert seqs(events) == [1, 2, 3]
    assert events[2].data["content"] == "héllo 你好"
    assert report.clean
    assert seqs(log.read(2)[0]) == [3]
    assert log.appended_bytes > 0


def test_a_log_never_written_reads_as_missing(store: SessionStorage) -> None:
    events, report = store.event_log(created(store)).read()
    assert events == []
    assert report.missing


def test_a_second_reader_sees_what_the_owner_appended(store: SessionStorage) -> None:
    sid = created(store)
    owner = store.event_log(sid)
    owner.append([user(1)])
    owner.close()
    assert seqs(store.event_log(sid).read()[0]) == [1]


def test_a_second_reader_reads_the_last_seq_cheaply(store: SessionStorage) -> None:
    sid = created(store)
    assert store.event_log(sid).last_seq() == 0  # nothing written yet
    owner = store.event_log(sid)
    owner.append([user(1), user(2), user(3)])
    assert store.event_log(sid).last_seq() == 3
    owner.roll_over(3, archive=True)
    assert store.event_log(sid).last_seq() == 0  # all rolled out: the snapshot holds them


@pytest.mark.parametrize("archive", [True, False])
def test_a_rollover_moves_old_events_out_of_the_live_log(
    store: SessionStorage, archive: bool
) -> None:
    log = store.event_log(created(store))
    log.append([user(i) for i in range(1, 7)])
    assert log.roll_over(4, archive=archive) == 4
    assert seqs(log.read()[0]) == [5, 6]
    assert seqs(log.read_archive()) == ([1, 2, 3, 4] if archive else [])
    log.append([user(7)])  # the log goes on after a rollover
    assert seqs(log.read()[0]) == [5, 6, 7]


def test_rolling_over_again_archives_each_event_once(store: SessionStorage) -> None:
    log = store.event_log(created(store))
    log.append([user(i) for i in range(1, 9)])
    log.roll_over(3, archive=True)
    log.roll_over(6, archive=True)
    assert seqs(log.read_archive()) == [1, 2, 3, 4, 5, 6]
    assert seqs(log.read()[0]) == [7, 8]


def test_the_first_archived_event_of_a_kind_is_the_oldest_one(store: SessionStorage) -> None:
    log = store.event_log(created(store))
    assert log.first_archived("user_message") is None  # no archive yet
    start = Event.session_start(1, agent="assistant", on_disconnect="pause")
    decoy = Event.assistant_response(2, agent="assistant", content='"user_message"')
    log.append([start, decoy, user(3, "the task"), user(4, "later"), user(5)])
    log.roll_over(4, archive=True)
    first = log.first_archived("user_message")
    assert first is not None
    assert (first.seq, first.data["content"]) == (3, "the task")
    assert log.first_archived("tool_result") is None


def test_a_rollover_with_nothing_old_changes_nothing(store: SessionStorage) -> None:
    log = store.event_log(created(store))
    log.append([user(5), user(6)])
    assert log.roll_over(4, archive=True) == 0
    assert seqs(log.read()[0]) == [5, 6]
    assert log.read_archive() == []


# --- snapshots -----------------------------------------------------------------------------


def test_a_snapshot_reads_back_equal_and_is_a_copy(store: SessionStorage) -> None:
    sid = created(store)
    snapshots = store.snapshot(sid)
    assert snapshots.read() is None
    assert not snapshots.exists()
    written = snapshot(sid)
    snapshots.write(written)
    written.agent = "changed after the write"
    loaded = snapshots.read()
    assert loaded is not None
    assert loaded.to_dict() == snapshot(sid).to_dict()
    assert snapshots.exists()
    assert store.exists(sid)
    assert snapshots.last_size > 0


def test_a_new_snapshot_replaces_the_old(store: SessionStorage) -> None:
    snapshots = store.snapshot(sid := created(store))
    snapshots.write(snapshot(sid, last_event_seq=3))
    snapshots.write(snapshot(sid, last_event_seq=9, status=SessionStatus.PAUSED))
    loaded = store.snapshot(sid).read()
    assert loaded is not None
    assert (loaded.last_event_seq, loaded.status) == (9, SessionStatus.PAUSED)


def test_a_header_describes_the_session_without_its_conversation(store: SessionStorage) -> None:
    sid = created(store)
    assert store.header(sid) is None
    store.snapshot(sid).write(snapshot(sid, status=SessionStatus.PAUSED))
    head = store.header(sid)
    assert head is not None
    assert (head["agent"], head["status"], head["created_at"]) == (
        "assistant",
        "paused",
        "2026-11-24T00:00:00.000Z",
    )
    assert "conversation" not in head


# --- quarantine ----------------------------------------------------------------------------


def test_a_quarantined_session_is_kept_with_its_reason_and_can_be_restored(
    store: SessionStorage,
) -> None:
    sid = created(store)
    store.event_log(sid).append([user(1)])
    store.snapshot(sid).write(snapshot(sid))
    store.chats.set(("http", "c1", "a"), sid)
    store.quarantine(sid, "events 2–3 are missing")
    assert not store.exists(sid)
    assert store.list_ids() == []
    assert store.quarantined() == [sid]
    assert "events 2–3 are missing" in (store.quarantine_reason(sid) or "")
    assert store.chats.get(("http", "c1", "a")) is None
    head = store.header(sid, quarantined=True)
    assert head is not None
    assert head["agent"] == "assistant"

    store.restore(sid)
    assert store.exists(sid)
    assert store.quarantine_reason(sid) is None
    assert seqs(store.event_log(sid).read()[0]) == [1]


def test_restoring_what_is_not_quarantined_is_refused(store: SessionStorage) -> None:
    with pytest.raises(FileNotFoundError):
        store.restore("s9")


def test_restoring_over_a_live_session_is_refused(store: SessionStorage) -> None:
    sid = created(store)
    store.event_log(sid).append([user(1)])
    store.quarantine(sid, "bad")
    store.create(sid)
    store.event_log(sid).append([user(1)])
    with pytest.raises(FileExistsError):
        store.restore(sid)


def test_a_session_never_quarantined_has_no_reason(store: SessionStorage) -> None:
    assert store.quarantine_reason(created(store)) is None


# --- chats and health ------------------------------------------------------------------------


def test_chats_map_to_sessions_and_survive_a_reload(store: SessionStorage) -> None:
    key = ("telegram", "42", "assistant")
    store.chats.set(key, "s1")
    store.chats.set(("http", "x", "a"), "s2")
    store.chats.set(("http", "x", "a"), None)
    store.open()
    assert store.chats.get(key) == "s1"
    assert store.chats.items() == [(key, "s1")]
    store.chats.remove_session("s1")
    assert store.chats.get(key) is None


def test_health_reports_the_last_write(store: SessionStorage) -> None:
    assert store.health.check() is None
    failure = OSError(28, "No space left on device")
    store.health.failed(failure)
    assert store.health.failure is failure
    store.health.succeeded()
    assert store.health.check() is None
