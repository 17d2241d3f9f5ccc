"""What the Postgres backend adds to the contract: refused duplicates, clear outages, no leaks."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from duragent.core.events import Event
from duragent.errors import StorageError
from duragent.store.postgres import Database, PostgresSessionStore, describe_dsn, dsn_password
from tests.store import postgres_db


@pytest.fixture
def store() -> Iterator[PostgresSessionStore]:
    with postgres_db.fresh_schema() as schema, postgres_db.database(schema) as db:
        made = PostgresSessionStore(db, node_id="n1")
        made.open()
        yield made


def test_a_duplicate_seq_is_refused_by_the_database(store: PostgresSessionStore) -> None:
    store.create("s1")
    log = store.event_log("s1")
    log.append([Event.user_message(1, content="a")])
    with pytest.raises(ValueError, match=r"already has an event with one of the seqs \[2, 1\]"):
        log.append([Event.user_message(2, content="b"), Event.user_message(1, content="c")])
    events, _ = log.read()
    assert [(e.seq, e.data["content"]) for e in events] == [(1, "a")]  # all or nothing


def test_text_postgres_cannot_hold_as_jsonb_round_trips(store: PostgresSessionStore) -> None:
    store.create("s1")
    text = "nul \x00, emoji 🧪, rtl עברית, \\u0000 literally"
    store.event_log("s1").append([Event.user_message(1, content=text)])
    assert store.event_log("s1").read()[0][0].data["content"] == text


def test_an_unreachable_database_is_a_storage_error_without_the_password() -> None:
    dsn = "postgresql://duragent:s3cret-pass@127.0.0.1:1/nowhere"
    db = Database(dsn, connect_timeout=0.3)
    with pytest.raises(StorageError) as caught:
        PostgresSessionStore(db, node_id="n1").open()
    told = str(caught.value)
    assert "connecting to the database" in told
    assert "127.0.0.1:1/nowhere" in told
    assert "s3cret-pass" not in told


def test_a_dsn_is_described_without_its_password() -> None:
    dsn = "postgresql://app:hunter2-long@db.example:6543/prod"
    assert describe_dsn(dsn) == "postgresql://app@db.example:6543/prod"
    assert dsn_password(dsn) == "hunter2-long"
    assert "pw-1234567" not in describe_dsn("host=h dbname=d user=u password=pw-1234567")


def test_health_recovers_once_the_database_answers_again(store: PostgresSessionStore) -> None:
    store.health.failed(OSError(111, "connection refused"))
    assert store.health.check(min_interval=0) is None


def test_a_run_log_keeps_only_the_newest_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    from duragent.store.postgres import PostgresRunLog, migrate
    from duragent.store.postgres import schedules as module

    monkeypatch.setattr(module, "PRUNE_KEEP", 3)
    with postgres_db.fresh_schema() as schema, postgres_db.database(schema) as db:
        db.open()
        migrate(db)
        runs = PostgresRunLog(db)
        for i in range(5):
            runs.append("daily", {"n": i})
        assert [r["n"] for r in runs.recent("daily", 10)] == [2, 3, 4]


def test_connections_the_server_dropped_are_replaced_without_losing_a_write(
    store: PostgresSessionStore,
) -> None:
    store.create("s1")
    store.event_log("s1").append([Event.user_message(1, content="before")])
    with postgres_db.psycopg.connect(postgres_db.DSN, autocommit=True) as admin:
        killed = admin.execute(  # what a database restart does to every open connection
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = %s",
            (f"duragent:{store.db.schema}",),
        ).fetchone()
    assert killed is not None
    assert killed[0] >= 1
    store.event_log("s1").append([Event.user_message(2, content="after")])
    assert [e.seq for e in store.event_log("s1").read()[0]] == [1, 2]
    assert store.health.check(min_interval=0) is None


def test_a_database_that_cannot_be_reached_shows_in_health_until_it_answers() -> None:
    db = Database("postgresql://u:pw-not-shown-1@127.0.0.1:1/x", connect_timeout=0.3)
    store = PostgresSessionStore(db, node_id="n1")
    with pytest.raises(StorageError):
        store.open()
    assert store.health.failure is not None
    failure = store.health.check(min_interval=0)
    assert failure is not None
    assert "127.0.0.1:1/x" in str(failure)
    assert "pw-not-shown-1" not in str(failure)


def test_losing_the_database_fails_writes_clearly_and_they_work_again_when_it_returns() -> None:
    outage = postgres_db.Outage()
    with postgres_db.fresh_schema() as schema:
        db = Database(outage.dsn, schema=schema, max_size=2, connect_timeout=0.3)
        store = PostgresSessionStore(db, node_id="n1")
        try:
            store.open()
            store.create("s1")
            log = store.event_log("s1")
            log.append([Event.user_message(1, content="before")])
            assert store.health.check(min_interval=0) is None

            outage.down()
            with pytest.raises(StorageError, match="appending to session s1"):
                log.append([Event.user_message(2, content="during")])
            assert store.health.check(min_interval=0) is not None  # /readyz: not ready

            outage.up()
            deadline = time.monotonic() + 120  # the pool reconnects with a backoff of ~1 s
            while store.health.check(min_interval=0) is not None:  # recovers by itself
                assert time.monotonic() < deadline, "the store did not recover"
                time.sleep(0.05)
            log.append([Event.user_message(2, content="after")])
            assert [e.data["content"] for e in log.read()[0]] == ["before", "after"]
        finally:
            store.close()
            outage.down()
