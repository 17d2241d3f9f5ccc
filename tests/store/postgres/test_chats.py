"""The chat map in PostgreSQL: a row the code cannot use is moved aside, never blocks its chat.

A bad row (a session id that names no possible session) is moved to ``chats_quarantine``
with why, wherever it is read, and reported (``/readyz``, ``doctor``); the chat's next
message gets a new session. A row whose session no longer exists is reported until the
chat's next message replaces it. All of it also after a restart.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import pytest

from duragent.session import NewSession, RegistrySettings, SessionRegistry
from duragent.store.postgres import PostgresSessionStore
from duragent.store.postgres.chats import chat_problems
from tests.store import postgres_db

CHAT = ("telegram", "1", "bot")
OTHER = ("telegram", "2", "bot")


@pytest.fixture
def schema() -> Iterator[str]:
    with postgres_db.fresh_schema() as name:
        yield name


def new_chat(chat_id: str) -> NewSession:
    return NewSession(agent="bot", gateway="telegram", gateway_chat_id=chat_id)


@asynccontextmanager
async def node(schema: str, name: str = "n1") -> AsyncIterator[SessionRegistry]:
    """A node's registry on ``schema``: a start, and a stop at the end (its pool closes)."""
    with postgres_db.database(schema) as db:
        registry = SessionRegistry(PostgresSessionStore(db, node_id=name), RegistrySettings())
        await registry.open()
        try:
            yield registry
        finally:
            await registry.aclose()


def sql(schema: str, statement: str, *args: object) -> list[tuple[object, ...]]:
    """A statement run by hand (a person at ``psql``)."""
    with postgres_db.psycopg.connect(postgres_db.DSN, autocommit=True) as conn:
        conn.execute(f"SET search_path = {schema}")
        cursor = conn.execute(statement, args)
        return cursor.fetchall() if cursor.description else []


def doctor(schema: str) -> list[dict[str, str]]:
    """What ``duragent doctor`` reads (without moving anything)."""
    with postgres_db.database(schema) as db:
        db.open()
        return chat_problems(db)


async def say(registry: SessionRegistry, key: tuple[str, str, str], text: str) -> str:
    """A chat's message as a front end hands it on: its session, and the message in it."""
    session_id = await registry.for_chat(key, new_chat(key[1]))
    await registry.handle(session_id).add_user_message(content=text)
    return session_id


async def test_a_bad_row_is_moved_aside_and_its_chat_gets_a_new_session(schema: str) -> None:
    async with node(schema) as registry:
        other = await say(registry, OTHER, "hello")
    sql(schema, "INSERT INTO chats VALUES ('telegram', '1', 'bot', '_bad')")
    async with node(schema) as registry:  # a restart reads the table
        [reported] = registry.store.chats.skipped()
        assert sql(schema, "SELECT session_id FROM chats WHERE chat_id = '1'") == []
        fresh = await say(registry, CHAT, "still here?")
        said = [m.content for m in await registry.handle(fresh).messages()]
        assert await registry.for_chat(OTHER, new_chat("2")) == other
    async with node(schema, "n2") as registry:  # still reported after another start
        again = registry.store.chats.skipped()
        assert await registry.chat_session(CHAT) == fresh
    aside = sql(schema, "SELECT gateway, chat_id, agent, session_id FROM chats_quarantine")
    assert said == ["still here?"]
    assert aside == [("telegram", "1", "bot", "_bad")]
    assert reported["record"] == "chats table row ['telegram', '1', 'bot']"
    assert "starts with '.' or '_'" in reported["reason"]
    assert reported["moved_to"].startswith("chats_quarantine table row ")
    assert again == [reported]
    assert doctor(schema) == [reported]


async def test_a_bad_row_written_while_serving_is_moved_aside_when_its_chat_is_read(
    schema: str,
) -> None:
    async with node(schema) as registry:
        old = await say(registry, CHAT, "first")
        sql(schema, "UPDATE chats SET session_id = 'a/b' WHERE chat_id = '1'")
        fresh = await say(registry, CHAT, "second")  # a message, not an error
        [reported] = registry.store.chats.skipped()
    assert sql(schema, "SELECT session_id FROM chats_quarantine") == [("a/b",)]
    assert fresh != old
    assert "'a/b' is not a valid folder name" in reported["reason"]


def test_two_nodes_reading_a_bad_row_move_it_aside_once(schema: str) -> None:
    with postgres_db.database(schema) as db, postgres_db.database(schema) as other_db:
        first = PostgresSessionStore(db, node_id="a")
        second = PostgresSessionStore(other_db, node_id="b")
        first.open()
        sql(schema, "INSERT INTO chats VALUES ('telegram', '1', 'bot', '')")
        try:
            first.chats.load()
            second.open()
            assert len(first.chats.skipped()) == len(second.chats.skipped()) == 1
            assert sql(schema, "SELECT count(*) FROM chats_quarantine") == [(1,)]
        finally:
            first.close()
            second.close()


async def test_a_row_whose_session_is_gone_is_reported_until_the_chat_has_a_new_session(
    schema: str,
) -> None:
    async with node(schema) as registry:
        gone = await say(registry, CHAT, "first")
        await say(registry, OTHER, "hello")
    sql(schema, "DELETE FROM sessions WHERE session_id = %s", gone)  # by hand
    found = doctor(schema)
    async with node(schema) as registry:
        [reported] = registry.store.chats.skipped()
        fresh = await say(registry, CHAT, "second")
        after = registry.store.chats.skipped()
    assert fresh != gone
    assert found == [reported]
    assert set(reported) == {"record", "reason"}  # nothing was moved
    assert f"its session {gone} no longer exists" in reported["reason"]
    assert after == []
    assert doctor(schema) == []
