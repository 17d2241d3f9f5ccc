"""Session leases end to end in the registry: renewed while actors live, lost ones let go."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from duragent.session import NewSession, RegistrySettings, SessionRegistry
from duragent.store import FencedWriteError, LeaseHeldError
from duragent.store.postgres import Database, PostgresSessionStore
from tests.store import postgres_db


@pytest.fixture
def schema() -> Iterator[str]:
    with postgres_db.fresh_schema() as name:
        yield name


def leases(db: Database) -> dict[str, tuple[str | None, int, float | None]]:
    """session id → (owner, epoch, seconds left on the lease)."""
    with db.transaction("test") as conn:
        rows = conn.execute(
            "SELECT session_id, owner_node, epoch, extract(epoch FROM lease_expires_at - now()) "
            "FROM sessions WHERE quarantined_at IS NULL"
        ).fetchall()
    return {str(r[0]): (r[1], int(r[2]), None if r[3] is None else float(r[3])) for r in rows}


def expire_all(db: Database) -> None:
    """What a pause past the lease looks like to the database."""
    with db.transaction("test") as conn:
        conn.execute("UPDATE sessions SET lease_expires_at = now() - interval '1 second'")


async def test_one_renewal_renews_every_session_an_idle_node_holds(schema: str) -> None:
    with postgres_db.database(schema) as db:
        reg = SessionRegistry(PostgresSessionStore(db, node_id="n1", lease_seconds=30))
        await reg.open()
        try:
            ids = [await reg.create(NewSession(agent="a")) for _ in range(3)]
            with db.transaction("test") as conn:  # about to run out: nothing was written since
                conn.execute("UPDATE sessions SET lease_expires_at = now() + interval '1 second'")
            assert reg.leases is not None
            before = reg.leases.renewals
            await reg.leases.renew_once()
            after = leases(db)
            made = reg.leases.renewals - before
        finally:
            await reg.aclose()
    assert made == 1  # one round trip for the three sessions
    assert all(after[sid][0] == "n1" and (after[sid][2] or 0) > 20 for sid in ids)


async def test_an_idle_session_stays_with_its_node_past_the_lease(schema: str) -> None:
    with postgres_db.database(schema) as db, postgres_db.database(schema) as other_db:
        reg = SessionRegistry(PostgresSessionStore(db, node_id="n1", lease_seconds=0.6))
        other = PostgresSessionStore(other_db, node_id="n2", lease_seconds=0.6)
        await reg.open()
        other.open()
        try:
            sid = await reg.create(NewSession(agent="a"))
            assert reg.leases is not None
            for _ in range(4):  # 4 periods of lease/3 idle: longer than the lease itself
                await reg.leases.renew_once()
                await asyncio.sleep(reg.leases.interval)
            with pytest.raises(LeaseHeldError, match="owned by node n1"):
                other.own(sid)
        finally:
            await reg.aclose()
            other.close()


async def test_a_stopped_actor_gives_its_lease_up_and_is_not_renewed(schema: str) -> None:
    with postgres_db.database(schema) as db:
        reg = SessionRegistry(PostgresSessionStore(db, node_id="n1"))
        await reg.open()
        try:
            kept = await reg.create(NewSession(agent="a"))
            stopped = await reg.create(NewSession(agent="a"))
            await reg.stop(stopped)
            assert reg.leases is not None
            await reg.leases.renew_once()
            now = leases(db)
        finally:
            await reg.aclose()
    assert now[stopped][0] is None
    assert now[stopped][2] is None
    assert now[kept][0] == "n1"


async def test_a_fenced_write_drops_the_actor_and_the_next_request_meets_the_owner(
    schema: str,
) -> None:
    with postgres_db.database(schema) as db, postgres_db.database(schema) as other_db:
        mine = PostgresSessionStore(db, node_id="n1")
        reg = SessionRegistry(mine, RegistrySettings())
        other = SessionRegistry(PostgresSessionStore(other_db, node_id="n2"), RegistrySettings())
        await reg.open()
        await other.open()
        try:
            sid = await reg.create(NewSession(agent="a"))
            await reg.handle(sid).add_user_message(content="before the pause")
            expire_all(db)  # n1 paused past its lease; n2 takes the session over
            await other.handle(sid).add_user_message(content="on n2")
            with pytest.raises(FencedWriteError):
                await reg.handle(sid).add_user_message(content="stale")
            dropped = not reg.is_live(sid)
            refused = mine.fenced_writes
            with pytest.raises(LeaseHeldError, match="owned by node n2"):
                await reg.handle(sid).add_user_message(content="again")
            events = await other.handle(sid).events()
        finally:
            await reg.aclose()
            await other.aclose()
    assert dropped
    assert refused >= 1  # counted (/metrics: duragent_session_lease_events)
    contents = [e.data.get("content") for e in events if e.data.get("content")]
    assert contents == ["before the pause", "on n2"]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


async def test_a_lease_found_lost_by_renewal_stops_the_actor(schema: str) -> None:
    with postgres_db.database(schema) as db, postgres_db.database(schema) as other_db:
        reg = SessionRegistry(PostgresSessionStore(db, node_id="n1"))
        other = PostgresSessionStore(other_db, node_id="n2")
        await reg.open()
        other.open()
        try:
            sid = await reg.create(NewSession(agent="a"))
            expire_all(db)
            other.own(sid)
            assert reg.leases is not None
            lost = await reg.leases.renew_once()
            live = reg.is_live(sid)
        finally:
            await reg.aclose()
            other.close()
    assert lost == [sid]
    assert not live


async def test_a_chat_mapped_by_another_node_is_found_not_duplicated(schema: str) -> None:
    with postgres_db.database(schema) as db, postgres_db.database(schema) as other_db:
        first = SessionRegistry(PostgresSessionStore(db, node_id="n1"))
        second = SessionRegistry(PostgresSessionStore(other_db, node_id="n2"))
        await first.open()
        await second.open()  # loaded its copy of the chat map before the chat existed
        new = NewSession(agent="a", gateway="http", gateway_chat_id="c1")
        try:
            made = await first.for_chat(("http", "c1", "a"), new)
            await first.stop(made)  # n1 lets it go: n2 may load it
            found = await second.for_chat(("http", "c1", "a"), new)
        finally:
            await first.aclose()
            await second.aclose()
    assert found == made
