"""Saved tool outputs in PostgreSQL follow the file backend's rules, fenced like every write."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from duragent.store.postgres import FencedWriteError, PostgresSessionStore
from duragent.store.saved_outputs import SavedOutputLimits, SavedOutputNotFoundError, new_output_id
from tests.store import postgres_db


@pytest.fixture
def store() -> Iterator[PostgresSessionStore]:
    with postgres_db.fresh_schema() as schema, postgres_db.database(schema) as db:
        made = PostgresSessionStore(db, node_id="n1")
        made.open()
        made.create("s1")
        made.create("s2")
        yield made


def test_a_saved_output_is_read_back_whole_even_with_a_nul_byte(
    store: PostgresSessionStore,
) -> None:
    outputs = store.saved_outputs("s1")
    output_id = outputs.new_id()
    text = "line ünïcode 😀 \x00 nul\n" * 1000
    outputs.save(output_id, text)
    assert store.saved_outputs("s1").read(output_id) == text
    assert outputs.ids() == [output_id]


@pytest.mark.parametrize("bad", ["../state.yaml", "out_01jabcdefghjkmnpqrstvwxyz0", ""])
def test_anything_but_a_well_formed_id_is_not_found(store: PostgresSessionStore, bad: str) -> None:
    outputs = store.saved_outputs("s1")
    with pytest.raises(SavedOutputNotFoundError):
        outputs.read(bad)
    with pytest.raises(SavedOutputNotFoundError):
        outputs.save(bad, "x")


def test_another_sessions_output_is_not_found_and_a_deleted_session_takes_its_own(
    store: PostgresSessionStore,
) -> None:
    mine = store.saved_outputs("s1")
    output_id = mine.new_id()
    mine.save(output_id, "private")
    with pytest.raises(SavedOutputNotFoundError):
        store.saved_outputs("s2").read(output_id)
    store.delete("s1")
    with pytest.raises(SavedOutputNotFoundError):
        store.saved_outputs("s1").read(output_id)


def test_the_caps_and_the_retention_are_those_of_the_files(store: PostgresSessionStore) -> None:
    capped = store.saved_outputs("s1", SavedOutputLimits(max_output_bytes=1024))
    big = capped.new_id()
    capped.save(big, "é" * 5000)
    assert "[saved output stops here: first 1024 of 10000 bytes]" in capped.read(big)

    outputs = store.saved_outputs("s2", SavedOutputLimits(max_session_bytes=2500))
    ids = []
    for _ in range(5):
        ids.append(outputs.new_id())
        outputs.save(ids[-1], "x" * 1000)
    assert outputs.ids() == ids[-2:]

    old = "out_00" + "0" * 8 + "ABCDEFGHJKMNPQRS"  # saved at the epoch
    outputs.save(old, "old")
    assert old in outputs.ids()  # the one just saved is never removed
    outputs.save(new_output_id(), "new")
    assert old not in outputs.ids()


def test_a_node_that_lost_the_session_cannot_save_an_output(store: PostgresSessionStore) -> None:
    outputs = store.saved_outputs("s1")
    outputs.save(outputs.new_id(), "mine")
    with store.db.transaction("test") as conn:  # another node took the session over
        conn.execute("UPDATE sessions SET epoch = epoch + 1 WHERE session_id = 's1'")
    with pytest.raises(FencedWriteError):
        outputs.save(outputs.new_id(), "stale")
