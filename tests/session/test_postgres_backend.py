"""The session layer runs on PostgreSQL: actors, snapshots, rollover, a restart, a lost lease."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from duragent.core.events import Event
from duragent.core.messages import Role
from duragent.errors import StorageError
from duragent.session import NewSession, RegistrySettings, SessionRegistry
from duragent.store.postgres import PostgresSessionStore
from tests.store import postgres_db


@pytest.fixture
def schema() -> Iterator[str]:
    with postgres_db.fresh_schema() as name:
        yield name


async def test_a_session_survives_a_restart_of_the_whole_process(schema: str) -> None:
    with postgres_db.database(schema) as db:
        reg = SessionRegistry(PostgresSessionStore(db, node_id="n1"), RegistrySettings())
        await reg.open()
        try:
            sid = await reg.create(NewSession(agent="a", gateway="http", gateway_chat_id="c1"))
            for i in range(60):  # past a checkpoint: snapshot and rollover happen
                await reg.handle(sid).add_user_message(content=f"q{i}")
        finally:
            await reg.aclose()  # stops the actors, then closes the pool
    with postgres_db.database(schema) as db:  # a new process: new pool, new node id
        store = PostgresSessionStore(db, node_id="n2")
        reg = SessionRegistry(store, RegistrySettings())
        await reg.open()
        try:
            messages = await reg.handle(sid).messages()
            full = await reg.handle(sid).events(include_archive=True)
            listed = await reg.list_sessions()
            await reg.handle(sid).add_user_message(content="after the restart")
        finally:
            await reg.aclose()
    assert [m.content for m in messages if m.role is Role.USER] == [f"q{i}" for i in range(60)]
    assert [e.seq for e in full] == list(range(1, 62))
    assert [entry["session_id"] for entry in listed] == [sid]


async def test_an_actor_whose_lease_was_taken_cannot_record_anything(schema: str) -> None:
    with postgres_db.database(schema) as db, postgres_db.database(schema) as other_db:
        reg = SessionRegistry(PostgresSessionStore(db, node_id="n1"), RegistrySettings())
        other = PostgresSessionStore(other_db, node_id="n2")
        await reg.open()
        other.open()
        try:
            sid = await reg.create(NewSession(agent="a"))
            await reg.handle(sid).add_user_message(content="mine")
            with db.transaction("test") as conn:  # n1 paused past its lease
                conn.execute("UPDATE sessions SET lease_expires_at = now() - interval '1s'")
            taken_at = other.event_log(sid).last_seq() or 0
            other.event_log(sid).append([Event.user_message(taken_at + 1, content="n2's")])
            with pytest.raises(StorageError, match="stale epoch"):
                await reg.handle(sid).add_user_message(content="stale")
            contents = [e.data.get("content") for e in other.event_log(sid).read()[0]]
        finally:
            await reg.aclose()
            other.close()
    assert contents[-2:] == ["mine", "n2's"]
    assert "stale" not in contents
