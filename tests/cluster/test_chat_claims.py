"""A chat's first message reaching two nodes at once makes one session, not two.

Both nodes find the chat unmapped and each creates a session; the mapping is inserted only
where none exists (or where it still names the session the node found unusable), so one
insert wins and the other node drops the session it made and uses the winner's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from duragent.session import NewSession, SessionRegistry
from duragent.store.postgres import Database, PostgresSessionStore
from tests.store import postgres_db


@pytest.fixture
def schema() -> Iterator[str]:
    with postgres_db.fresh_schema() as name:
        yield name


def live_session_ids(db: Database) -> set[str]:
    with db.transaction("test") as conn:
        rows = conn.execute("SELECT session_id FROM sessions WHERE quarantined_at IS NULL")
        return {str(row[0]) for row in rows.fetchall()}


async def test_first_messages_of_new_chats_at_two_nodes_at_once_share_one_session(
    schema: str,
) -> None:
    chats = [f"c{n}" for n in range(8)]
    with postgres_db.database(schema) as db, postgres_db.database(schema) as other_db:
        a = SessionRegistry(PostgresSessionStore(db, node_id="a"))
        b = SessionRegistry(PostgresSessionStore(other_db, node_id="b"))
        await a.open()
        await b.open()
        try:
            pairs = []
            for chat in chats:
                new = NewSession(agent="bot", gateway="telegram", gateway_chat_id=chat)
                key = ("telegram", chat, "bot")
                pairs.append(await asyncio.gather(a.for_chat(key, new), b.for_chat(key, new)))
            mapped = [b.store.fetch_chat(("telegram", c, "bot")) for c in chats]  # type: ignore[attr-defined]
            sessions = live_session_ids(db)
        finally:
            await a.aclose()
            await b.aclose()
    assert all(on_a == on_b for on_a, on_b in pairs)  # both nodes answer from one session
    assert mapped == [on_a for on_a, _ in pairs]
    assert sessions == set(mapped)  # the losers' sessions are gone


async def test_a_chat_whose_session_was_unusable_is_remapped_once(schema: str) -> None:
    with postgres_db.database(schema) as db, postgres_db.database(schema) as other_db:
        a = SessionRegistry(PostgresSessionStore(db, node_id="a"))
        b = SessionRegistry(PostgresSessionStore(other_db, node_id="b"))
        await a.open()
        await b.open()
        new = NewSession(agent="bot", gateway="telegram", gateway_chat_id="c1")
        key = ("telegram", "c1", "bot")
        try:
            old = await a.for_chat(key, new)
            await a.stop(old)
            await a.delete(old)  # the map still names it: both nodes find it unusable
            await asyncio.to_thread(a.store.chats.set, key, old)
            on_a, on_b = await asyncio.gather(a.for_chat(key, new), b.for_chat(key, new))
            sessions = live_session_ids(db)
        finally:
            await a.aclose()
            await b.aclose()
    assert on_a == on_b != old
    assert sessions == {on_a}
