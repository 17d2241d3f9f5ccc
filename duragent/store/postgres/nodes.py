"""The ``nodes`` table: where each node of a deployment answers, and whether it is alive.

A node registers its advertised base URL at start (``register``), refreshes ``heartbeat_at``
in the same round trip that renews its session leases (``heartbeat``, every lease/3), and
removes itself on a clean stop (``leave``). Another node asks ``lookup(owner)`` before
forwarding a request for a session that node owns: a heartbeat older than ``stale_after``
means the owner is gone or paused, so the request waits for the lease to expire and the
session is taken over instead of being sent to a node that will not answer.

``cluster_secret`` is the HMAC key forwarded requests are signed with; the first node to
ask creates it (``secret``), so a deployment needs no extra configuration.
"""

from __future__ import annotations

import secrets

from duragent.store.ownership import NodeRecord
from duragent.store.postgres.connection import Database

__all__ = ["PostgresNodes"]


class PostgresNodes:
    """The ``nodes`` and ``cluster_secret`` tables of one database (see module docstring)."""

    def __init__(self, db: Database, node_id: str) -> None:
        self._db = db
        self.node_id = node_id

    def register(self, base_url: str) -> None:
        """Announce (or re-announce after a restart) this node at ``base_url``."""
        with self._db.transaction("registering this node") as conn:
            conn.execute(
                "INSERT INTO nodes (node_id, base_url) VALUES (%s, %s) ON CONFLICT (node_id) "
                "DO UPDATE SET base_url = excluded.base_url, started_at = now(), "
                "heartbeat_at = now()",
                (self.node_id, base_url),
            )

    def leave(self) -> None:
        """Remove this node (a clean stop): nobody forwards to it any more."""
        with self._db.transaction("unregistering this node") as conn:
            conn.execute("DELETE FROM nodes WHERE node_id = %s", (self.node_id,))

    def lookup(self, node_id: str) -> NodeRecord | None:
        """``node_id``'s address and heartbeat age, or None when it is not registered."""
        with self._db.transaction(f"looking up node {node_id}") as conn:
            row = conn.execute(
                "SELECT node_id, base_url, extract(epoch FROM now() - heartbeat_at) "
                "FROM nodes WHERE node_id = %s",
                (node_id,),
            ).fetchone()
        if row is None:
            return None
        return NodeRecord(str(row[0]), str(row[1]), float(row[2]))

    def secret(self) -> bytes:
        """The deployment's signing key for node-to-node requests (made on first use)."""
        with self._db.transaction("reading the cluster key") as conn:
            conn.execute(
                "INSERT INTO cluster_secret (id, secret) VALUES (1, %s) ON CONFLICT DO NOTHING",
                (secrets.token_hex(32),),
            )
            row = conn.execute("SELECT secret FROM cluster_secret WHERE id = 1").fetchone()
        assert row is not None
        return str(row[0]).encode()
