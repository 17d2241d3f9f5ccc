"""Outages at the worst moments: a lost COMMIT answer, a long outage, a client waiting.

A TCP relay (``postgres_db.Outage``) stands between the store and the real database.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from duragent.core.events import Event
from duragent.errors import StorageError
from duragent.store.postgres import Database, PostgresSessionStore
from tests.store import postgres_db


@contextmanager
def store_through(outage: postgres_db.Outage, timeout: float = 5) -> Iterator[PostgresSessionStore]:
    with postgres_db.fresh_schema() as schema:
        db = Database(outage.dsn, schema=schema, max_size=2, connect_timeout=timeout)
        store = PostgresSessionStore(db, node_id="n1")
        try:
            store.open()
            yield store
        finally:
            store.close()
            outage.down()


def wait_until_healthy(store: PostgresSessionStore, seconds: float = 120) -> float:
    """Seconds until the store answers again."""
    began = time.monotonic()
    while store.health.check(min_interval=0) is not None:
        assert time.monotonic() - began < seconds, "the store did not recover"
        time.sleep(0.05)
    return time.monotonic() - began


def rows(store: PostgresSessionStore, session_id: str) -> list[tuple[int, str]]:
    with store.db.transaction("test") as conn:
        found = conn.execute(
            "SELECT e.seq, e.event->>'content' FROM events e JOIN sessions s "
            "USING (session_key) WHERE s.session_id = %s ORDER BY e.seq",
            (session_id,),
        ).fetchall()
    return [(int(seq), str(text)) for seq, text in found]


def test_an_append_whose_commit_answer_was_lost_leaves_nothing_behind_once_settled() -> None:
    outage = postgres_db.Outage()
    with store_through(outage) as store:
        store.create("s1")
        log = store.event_log("s1")
        log.append([Event.user_message(1, content="before")])

        outage.lose_next_commit_answer()
        with pytest.raises(StorageError, match="appending to session s1"):
            log.append([Event.user_message(2, content="lost")])  # committed, but told failed
        assert outage.commits_lost == 1
        outage.up()
        wait_until_healthy(store)
        assert [e.data["content"] for e in log.read()[0]] == ["before"]  # as the writer was told

        log.append([Event.user_message(2, content="after")])  # the seq is reused, as journals do
        assert rows(store, "s1") == [(1, "before"), (2, "after")]
        log.append([Event.user_message(3, content="next")])
        assert [e.data["content"] for e in log.read()[0]] == ["before", "after", "next"]


def test_a_batch_retried_after_a_lost_commit_answer_is_written_once() -> None:
    outage = postgres_db.Outage()
    with store_through(outage) as store:
        store.create("s1")
        log = store.event_log("s1")
        log.append([Event.user_message(1, content="first")])  # the lease is claimed
        batch = [Event.user_message(2, content="a"), Event.user_message(3, content="b")]
        outage.lose_next_commit_answer()
        with pytest.raises(StorageError):
            log.append(batch)
        outage.up()
        wait_until_healthy(store)
        log.append(batch)  # the journal retries a failed batch as it was
        assert rows(store, "s1") == [(1, "first"), (2, "a"), (3, "b")]


def test_while_the_database_is_away_a_write_fails_in_about_a_second_not_after_the_timeout() -> None:
    outage = postgres_db.Outage()
    with store_through(outage, timeout=120) as store:
        store.create("s1")
        log = store.event_log("s1")
        log.append([Event.user_message(1, content="before")])
        outage.down()
        began = time.monotonic()
        with pytest.raises(StorageError):
            log.append([Event.user_message(2, content="during")])
        first = time.monotonic() - began
        began = time.monotonic()
        with pytest.raises(StorageError):
            log.append([Event.user_message(2, content="during")])
        second = time.monotonic() - began
    assert first < 120 / 4  # the pool's refused attempts end the wait, not the 120 s timeout
    assert second < 120 / 4


@pytest.mark.slow  # ~12 s: an outage longer than the pool's first backoff steps
def test_after_a_long_outage_the_store_answers_soon_after_the_database_returns() -> None:
    outage = postgres_db.Outage()
    with store_through(outage, timeout=2) as store:
        store.create("s1")
        log = store.event_log("s1")
        log.append([Event.user_message(1, content="before")])
        outage.down()
        with pytest.raises(StorageError):
            log.append([Event.user_message(2, content="during")])
        time.sleep(8)  # uncapped, the pool's next attempt would be at ~15 s
        outage.up()
        recovered = wait_until_healthy(store, seconds=20)
        log.append([Event.user_message(2, content="after")])
    assert recovered < 3, f"took {recovered:.1f} s after the database returned"


def test_a_busy_pool_is_neither_reported_as_a_failure_nor_given_up_on() -> None:
    with postgres_db.fresh_schema() as schema:
        db = Database(postgres_db.DSN, schema=schema, max_size=1, connect_timeout=10)
        db.open()
        try:
            held = threading.Event()

            def hold() -> None:
                with db.transaction("holding the only connection") as conn:
                    held.set()
                    conn.execute("SELECT pg_sleep(2)")

            holder = threading.Thread(target=hold)
            holder.start()
            held.wait()
            db.ping(timeout=0.1)  # /readyz's probe: every connection busy is not "away"
            assert db.failure is None
            with db.transaction("waiting for the connection") as conn:  # waits, then works
                assert conn.execute("SELECT 1").fetchone() == (1,)
            holder.join()
        finally:
            db.close()
