"""The lease epoch fences every write: a node that lost a session can never write to it again."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from duragent.core.events import Event
from duragent.core.messages import Message
from duragent.core.snapshot import SessionSnapshot
from duragent.errors import StorageError
from duragent.store.postgres import (
    FencedWriteError,
    LeaseHeldError,
    PostgresSessionStore,
)
from tests.store import postgres_db


@pytest.fixture
def schema() -> Iterator[str]:
    with postgres_db.fresh_schema() as name:
        yield name


@pytest.fixture
def node_a(schema: str) -> Iterator[PostgresSessionStore]:
    with postgres_db.database(schema) as db:
        store = PostgresSessionStore(db, node_id="node-a", lease_seconds=30)
        store.open()
        yield store


@pytest.fixture
def node_b(schema: str, node_a: PostgresSessionStore) -> Iterator[PostgresSessionStore]:
    with postgres_db.database(schema) as db:
        store = PostgresSessionStore(db, node_id="node-b", lease_seconds=30)
        store.open()
        yield store


def user(seq: int) -> Event:
    return Event.user_message(seq, content=f"m{seq}")


def expire_lease(store: PostgresSessionStore, session_id: str) -> None:
    """What a paused or partitioned owner looks like from the database: its lease ran out."""
    with store.db.transaction("test") as conn:
        conn.execute(
            "UPDATE sessions SET lease_expires_at = now() - interval '1 second' "
            "WHERE session_id = %s AND quarantined_at IS NULL",
            (session_id,),
        )


def test_an_append_with_a_stale_epoch_is_refused_and_writes_nothing(
    node_a: PostgresSessionStore, node_b: PostgresSessionStore
) -> None:
    node_a.create("s1")
    stale = node_a.event_log("s1")
    stale.append([user(1)])
    expire_lease(node_a, "s1")
    node_b.event_log("s1").append([user(2)])  # node b takes the session over: epoch 2

    with pytest.raises(FencedWriteError, match=r"stale epoch 1.*epoch 2.*node-b") as caught:
        stale.append([user(3)])
    assert isinstance(caught.value, StorageError)  # front ends answer it as a storage failure
    assert (caught.value.held_epoch, caught.value.current_epoch) == (1, 2)
    with pytest.raises(FencedWriteError):
        stale.append([user(3)])  # and stays refused: it never re-claims by itself
    assert [e.seq for e in node_b.event_log("s1").read()[0]] == [1, 2]


def test_a_stale_owner_cannot_roll_over_or_snapshot_either(
    node_a: PostgresSessionStore, node_b: PostgresSessionStore
) -> None:
    node_a.create("s1")
    stale = node_a.event_log("s1")
    stale.append([user(1), user(2)])
    expire_lease(node_a, "s1")
    node_b.event_log("s1").append([user(3)])
    with pytest.raises(FencedWriteError):
        stale.roll_over(2, archive=True)
    snap = SessionSnapshot(
        session_id="s1",
        agent="a",
        created_at="2026-11-24T00:00:00.000Z",
        updated_at="2026-11-24T00:00:00.000Z",
        conversation=[Message.user("x")],
    )
    with pytest.raises(FencedWriteError):
        node_a.snapshot("s1").write(snap)
    assert node_b.snapshot("s1").read() is None
    assert node_b.event_log("s1").read_archive() == []


def test_a_live_lease_of_another_node_is_not_taken(
    node_a: PostgresSessionStore, node_b: PostgresSessionStore
) -> None:
    node_a.create("s1")
    node_a.event_log("s1").append([user(1)])
    with pytest.raises(LeaseHeldError, match="owned by node node-a"):
        node_b.event_log("s1").append([user(2)])
    assert [e.seq for e in node_a.event_log("s1").read()[0]] == [1]


def test_a_released_lease_is_claimed_by_the_next_node_with_a_higher_epoch(
    node_a: PostgresSessionStore, node_b: PostgresSessionStore
) -> None:
    node_a.create("s1")
    log = node_a.event_log("s1")
    log.append([user(1)])
    log.close()  # the actor stopped: the lease is given up, the epoch stays
    node_b.event_log("s1").append([user(2)])
    assert node_b.lease("s1").epoch == 2


def test_quarantine_fences_the_writer_that_still_holds_the_session(
    node_a: PostgresSessionStore,
) -> None:
    node_a.create("s1")
    log = node_a.event_log("s1")
    log.append([user(1)])
    held = node_a.lease("s1")
    with node_a.db.transaction("test") as conn:  # another node quarantines it
        conn.execute("UPDATE sessions SET quarantined_at = now(), epoch = epoch + 1")
    with pytest.raises(FencedWriteError, match="no longer live"):
        log.append([user(2)])
    assert held.epoch == 1


def test_a_failed_first_write_leaves_no_phantom_epoch(node_a: PostgresSessionStore) -> None:
    node_a.create("s1")
    log = node_a.event_log("s1")
    log.append([user(1)])
    with pytest.raises(ValueError, match="already has an event"):
        log.append([user(1)])  # refused by the primary key
    log.append([user(2)])  # the same lease still writes
    assert [e.seq for e in log.read()[0]] == [1, 2]


def test_a_node_restarted_after_a_crash_takes_its_sessions_straight_back(
    schema: str, node_a: PostgresSessionStore
) -> None:
    node_a.create("s1")
    crashed = node_a.event_log("s1")
    crashed.append([user(1)])  # and never released: the process died
    with postgres_db.database(schema) as db:
        restarted = PostgresSessionStore(db, node_id="node-a")
        restarted.open()
        restarted.event_log("s1").append([user(2)])  # no wait for the lease to expire
        assert restarted.lease("s1").epoch == 2
        with pytest.raises(FencedWriteError):
            crashed.append([user(3)])  # the old incarnation, were it alive, is fenced
        restarted.close()


def test_only_a_claim_over_a_lease_that_ran_out_tells_of_a_take_over(
    node_a: PostgresSessionStore, node_b: PostgresSessionStore
) -> None:
    told: list[tuple[str, str]] = []
    node_a.takeovers.listen(lambda sid: told.append(("node-a", sid)))
    node_b.takeovers.listen(lambda sid: told.append(("node-b", sid)))
    node_a.create("s1")
    node_a.own("s1")  # its own live lease again: nothing was left
    node_a.event_log("s1").close()  # released: whoever comes next finds nothing left
    node_b.own("s1")
    assert told == []
    expire_lease(node_b, "s1")  # node b died holding it
    node_a.own("s1")
    expire_lease(node_a, "s1")  # and node a too: its next life takes its own lease back
    node_a.own("s1")
    assert told == [("node-a", "s1"), ("node-a", "s1")]
    assert node_a.lease("s1").taken_over
