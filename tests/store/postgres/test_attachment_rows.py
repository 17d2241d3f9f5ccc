"""Attachments in PostgreSQL: one row per blob, written once, by any node, never torn.

The contract suite (``tests/store/test_attachment_storage_contract.py``) runs here too; these
are what only a database has: the row a repeated put leaves alone, the lease a put does not
take, the quarantined copy that keeps its rows, and a process SIGKILLed in the middle of its
puts.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from duragent.core.events import Event
from duragent.store.postgres import PostgresSessionStore
from tests.store import postgres_db
from tests.store.attachment_crash_child import Child

DATA = b"\xff\xd8\xff\xe0 a jpeg \x00" * 500


@pytest.fixture
def schema() -> Iterator[str]:
    with postgres_db.fresh_schema() as name:
        yield name


@pytest.fixture
def nodes(schema: str) -> Iterator[list[PostgresSessionStore]]:
    """Two nodes' stores on one schema; the first holds session ``s1``."""
    with ExitStack() as stack:
        made = []
        for node in ("n1", "n2"):
            store = PostgresSessionStore(
                stack.enter_context(postgres_db.database(schema)), node_id=node
            )
            store.open()
            stack.callback(store.close)
            made.append(store)
        made[0].create("s1")
        made[0].event_log("s1").append([Event.user_message(1, content="look")])
        yield made


def rows(store: PostgresSessionStore) -> list[tuple[str, bytes, str]]:
    """Every attachment row: hash, content, and the transaction that wrote it."""
    with store.db.transaction("reading attachment rows") as conn:
        found = conn.execute(
            "SELECT sha256, content, xmin::text FROM attachments ORDER BY sha256, session_key"
        ).fetchall()
    return [(str(r[0]), bytes(r[1]), str(r[2])) for r in found]


def settled_rows(nodes: list[PostgresSessionStore]) -> list[tuple[str, bytes, str]]:
    """The rows once the killed children's last commits are in, as both nodes see them.

    A kill that lands after a ``COMMIT`` was sent does not stop it: the server finishes the
    transaction after its client is gone, so a row may appear a moment after the kill. The
    rows are final once one node's table and the other node's listing agree.
    """
    deadline = time.monotonic() + 120
    while True:
        stored = rows(nodes[0])
        listed = nodes[1].attachments("s1").hashes()
        if sorted(sha for sha, _, _ in stored) == listed:
            return stored
        assert time.monotonic() < deadline, f"the nodes disagree: {stored} against {listed}"
        time.sleep(0.1)


def test_a_repeated_put_leaves_the_stored_row_as_it_was(nodes: list[PostgresSessionStore]) -> None:
    blobs = nodes[0].attachments("s1")
    blobs.put(DATA)
    before = rows(nodes[0])
    blobs.put(DATA)
    assert rows(nodes[0]) == before  # the same row version: not written again


def test_a_blob_put_by_another_node_takes_no_lease_from_the_owner(
    nodes: list[PostgresSessionStore],
) -> None:
    owner, downloader = nodes
    sha = downloader.attachments("s1").put(DATA)
    owner.event_log("s1").append([Event.user_message(2, content="see it")])
    assert owner.attachments("s1").read(sha) == DATA
    assert downloader.fenced_writes == 0
    assert owner.fenced_writes == 0


def test_a_quarantined_copy_keeps_its_rows_and_a_new_live_session_starts_without_them(
    nodes: list[PostgresSessionStore],
) -> None:
    store = nodes[0]
    store.attachments("s1").put(DATA)
    store.quarantine("s1", "checked by hand")
    store.create("s1")
    assert store.attachments("s1").hashes() == []
    assert [r[0] for r in rows(store)] == [hashlib.sha256(DATA).hexdigest()]  # the copy's


def test_a_process_killed_among_its_puts_leaves_each_row_whole_or_absent(
    nodes: list[PostgresSessionStore], schema: str
) -> None:
    acknowledged: list[str] = []
    rng = random.Random(36)
    for cycle in range(3):
        with Child("postgres", postgres_db.DSN, schema, "s1", str(cycle)) as child:
            acknowledged.extend(child.line("PUT").split()[1] for _ in range(1 + cycle))
            time.sleep(rng.uniform(0, 0.05))  # the kill's moment: sending, committing…
            child.kill()
    stored = settled_rows(nodes)
    for sha, content, _ in stored:
        assert hashlib.sha256(content).hexdigest() == sha, "a torn blob"
    assert set(acknowledged) <= {sha for sha, _, _ in stored}
