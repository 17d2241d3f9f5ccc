"""Chats a dead node left: found by their sessions' expired leases, freed once finished."""

from __future__ import annotations

import time

from duragent.store.postgres import PostgresSessionStore, postgres_cluster
from tests.store import postgres_db


def test_the_chats_of_sessions_whose_lease_expired_are_found_then_freed() -> None:
    with postgres_db.fresh_schema() as schema, postgres_db.database(schema) as db:
        dead = PostgresSessionStore(db, node_id="a", lease_seconds=0.2)
        dead.open()
        orphans = postgres_cluster(db, "b", lease_seconds=0.2).orphans
        assert orphans is not None
        for chat, session in (("42", "s_live"), ("43", "s_dead"), ("44", "s_idle")):
            dead.chats.set(("telegram", chat, "bot"), session)
            dead.lease(session)  # node a serves all three
        dead.drop_lease(dead.lease("s_idle"))  # stopped cleanly: the lease is free
        time.sleep(0.3)  # a died: the other two leases expire
        with db.transaction("a write renews the lease") as conn:
            dead.fenced(conn, "s_live")  # … except one a renews (it is alive again)
        assert orphans.chats("telegram") == [("43", "s_dead")]
        assert orphans.chats("discord") == []
        # a node starting also takes the free ones and its own (it may be a restarted a)
        assert orphans.chats("telegram", owned_by="a") == [
            ("42", "s_live"),
            ("43", "s_dead"),
            ("44", "s_idle"),
        ]
        orphans.adopt(["s_dead", "s_live"])  # finished: freed (a live lease is left alone)
        assert orphans.chats("telegram") == []
        assert orphans.chats("telegram", owned_by="b") == [("43", "s_dead"), ("44", "s_idle")]
