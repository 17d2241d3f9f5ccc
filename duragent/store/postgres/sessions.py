"""``PostgresSessionStore``: the ``SessionStorage`` protocol over PostgreSQL.

Same promises as the file backend (see ``protocols``): a write returns once committed, a
failed write leaves nothing behind (one transaction), reads never invent data. Differences
that follow from a database: a second event with the same seq is refused by the primary key
(``EventSeqConflictError``) instead of de-duplicated on read; every write is fenced by the
session's lease epoch (``leases``); the database being unreachable is a ``StorageError``.

An append whose COMMIT was never acknowledged is settled by the next fenced write (``doubt``).

The chat map (``chats``) and the health (``health``) are their own modules, and so are the
per-session views the store hands out: the event log (``event_rows``), the snapshot
(``snapshot_rows``), saved outputs (``outputs``) and attachments (``attachment_rows``).
``EventSeqConflictError`` is importable from here, as before.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import TupleRow

from duragent.core.events import now_rfc3339
from duragent.errors import StorageError
from duragent.store.chat_index import ChatKey
from duragent.store.postgres.attachment_rows import PostgresAttachments
from duragent.store.postgres.chats import PostgresChats
from duragent.store.postgres.connection import Database
from duragent.store.postgres.doubt import CommitsInDoubt
from duragent.store.postgres.event_rows import EventSeqConflictError, PostgresLog
from duragent.store.postgres.health import PostgresHealth
from duragent.store.postgres.leases import (
    FencedWriteError,
    Lease,
    claim,
    fence,
    release,
    renew,
)
from duragent.store.postgres.nodes import PostgresNodes
from duragent.store.postgres.outputs import PostgresSavedOutputs
from duragent.store.postgres.schema import migrate
from duragent.store.postgres.snapshot_rows import (
    LIVE,
    NEWEST_QUARANTINED,
    PostgresSnapshots,
    parse_document,
)
from duragent.store.saved_outputs import DEFAULT_LIMITS, SavedOutputLimits
from duragent.store.takeovers import TakeOvers

__all__ = ["EventSeqConflictError", "PostgresSessionStore"]


class PostgresSessionStore:
    """``SessionStorage`` in one schema of a PostgreSQL database (see module docstring)."""

    def __init__(self, db: Database, *, node_id: str, lease_seconds: float = 30.0) -> None:
        self.db = db
        self.node_id = node_id
        self.lease_seconds = lease_seconds
        self.root = Path(f"<{db.where}/{db.schema}>")
        """Where the ``path`` attributes point: descriptive only."""
        self.chats = PostgresChats(db)
        self.health = PostgresHealth(db)
        self.nodes = PostgresNodes(db, node_id)
        """The deployment's nodes (forwarding, heartbeats)."""
        self._opened = False
        self._lock = threading.Lock()
        self._leases: dict[str, Lease] = {}
        self.in_doubt = CommitsInDoubt()
        self.fenced_writes = 0
        """Writes refused by the fence since start (``/metrics``)."""
        self.takeovers = TakeOvers()
        """Told of every session claimed from a node whose lease ran out (``takeovers``)."""

    # --- lifecycle -------------------------------------------------------------------------

    def open(self) -> None:
        """Connect, apply pending migrations, load the chat map (again, when called again)."""
        if not self._opened:
            self.db.open()
            migrate(self.db)
            self._opened = True
        self.chats.load()

    def close(self) -> None:
        """Give every lease up and close the connections."""
        for lease in list(self._leases.values()):
            self.drop_lease(lease)
        self.db.close()
        self._opened = False

    # --- leases ----------------------------------------------------------------------------

    def lease(self, session_id: str) -> Lease:
        """The lease this node holds on ``session_id``, claimed (and committed) on first use.

        The claim is its own transaction, so a write that fails afterwards cannot leave this
        node holding an epoch the database never committed.
        """
        with self._lock:
            held = self._leases.get(session_id)
        if held is not None:
            return held
        with self.db.transaction(f"claiming session {session_id}") as conn:
            got = claim(conn, session_id, self.node_id, self.lease_seconds)
        self.in_doubt.forget(session_id)  # a doubt is settled under the epoch it arose in
        with self._lock:
            self._leases[session_id] = got
        if got.taken_over:
            self.takeovers.taken_over(session_id)
        return got

    def own(self, session_id: str) -> None:
        """Claim ``session_id`` afresh before an actor loads it (``SharedStorage.own``).

        Always a new claim, even over a lease this node holds: a new epoch fences whatever
        wrote under the old one (an actor that lost the session and has not stopped yet).
        """
        self._validate(session_id)
        with self.db.transaction(f"claiming session {session_id}") as conn:
            got = claim(conn, session_id, self.node_id, self.lease_seconds)
        with self._lock:
            self._leases[session_id] = got
        if got.taken_over:
            self.takeovers.taken_over(session_id)

    def renew_leases(self) -> list[str]:
        """Renew every lease held here and this node's heartbeat, in one round trip.

        Returns the sessions whose lease is lost (the registry stops their actors); their
        stale leases stay held here until then, so every write of theirs is refused.
        """
        with self._lock:
            held = list(self._leases.values())
        with self.db.transaction("renewing session leases") as conn:
            conn.execute(
                "UPDATE nodes SET heartbeat_at = now() WHERE node_id = %s", (self.node_id,)
            )
            lost = renew(conn, held, self.lease_seconds)
        return [lease.session_id for lease in lost]

    def fetch_chat(self, key: ChatKey) -> str | None:
        """The chat's session as stored now (read-through: another node may have mapped it)."""
        return self.chats.fetch(key)

    def fetch_chat_sessions(self, gateway: str, chat_id: str) -> list[tuple[ChatKey, str]]:
        """Every agent's session of one chat as stored now (read-through, as ``fetch_chat``)."""
        return self.chats.fetch_chat(gateway, chat_id)

    def map_chat(self, key: ChatKey, session_id: str, replacing: str | None) -> str:
        """Map the chat to a session it made unless another node mapped it first; the winner."""
        return self.chats.claim(key, session_id, replacing)

    def fenced(
        self, conn: psycopg.Connection[TupleRow], session_id: str, *, log: bool = False
    ) -> Lease:
        """Check and renew this node's lease inside ``conn``'s transaction (the fence)."""
        held = self.lease(session_id)
        try:
            fence(conn, held, self.lease_seconds, log_written=log)
        except FencedWriteError:
            with self._lock:
                self.fenced_writes += 1
            raise
        doubt = self.in_doubt.get(session_id)
        if doubt is not None:  # settle a lost commit: its rows were reported as not written
            conn.execute(
                "DELETE FROM events WHERE session_key = %s AND seq >= %s AND NOT archived",
                (held.session_key, doubt),
            )
        return held

    def drop_lease(self, lease: Lease) -> None:
        """Forget ``lease`` here and release it in the database (best effort)."""
        self.in_doubt.forget(lease.session_id)
        with self._lock:
            if self._leases.get(lease.session_id) == lease:
                del self._leases[lease.session_id]
        try:
            with self.db.transaction("releasing a session lease") as conn:
                release(conn, lease)
        except StorageError:
            pass  # it expires by itself

    def _forget_lease(self, session_id: str) -> None:
        self.in_doubt.forget(session_id)
        with self._lock:
            self._leases.pop(session_id, None)

    # --- sessions --------------------------------------------------------------------------

    def _validate(self, session_id: str) -> str:
        if not session_id or "/" in session_id or session_id.startswith((".", "_")):
            raise ValueError(f"invalid session id {session_id!r}")
        return session_id

    def create(self, session_id: str) -> Path:
        """Insert the session's row (``FileExistsError`` when a live one has the id)."""
        self._validate(session_id)
        try:
            with self.db.transaction(f"creating session {session_id}") as conn:
                conn.execute("INSERT INTO sessions (session_id) VALUES (%s)", (session_id,))
        except psycopg.errors.UniqueViolation:
            raise FileExistsError(f"session {session_id} exists") from None
        return self.root / session_id

    def discard_new(self, session_id: str) -> None:
        """Delete the row of a session whose creation failed."""
        self._forget_lease(session_id)
        with self.db.transaction(f"discarding new session {session_id}") as conn:
            conn.execute(
                "DELETE FROM sessions WHERE session_id = %s AND quarantined_at IS NULL",
                (session_id,),
            )

    def exists(self, session_id: str) -> bool:
        """Whether the live session has an event log or a snapshot."""
        with self.db.transaction(f"checking session {session_id}") as conn:
            row = conn.execute(
                "SELECT s.log_written OR EXISTS (SELECT 1 FROM snapshots n "
                "WHERE n.session_key = s.session_key) FROM sessions s "
                "WHERE s.session_id = %s AND s.quarantined_at IS NULL",
                (session_id,),
            ).fetchone()
        return bool(row and row[0])

    def list_ids(self) -> list[str]:
        """Every live session id, sorted as the file backend sorts (by code point)."""
        with self.db.transaction("listing sessions") as conn:
            rows = conn.execute(
                "SELECT session_id FROM sessions WHERE quarantined_at IS NULL"
            ).fetchall()
        return sorted(str(r[0]) for r in rows)

    def event_log(self, session_id: str) -> PostgresLog:
        """The event log of ``session_id``."""
        return PostgresLog(self, self._validate(session_id))

    def snapshot(self, session_id: str) -> PostgresSnapshots:
        """The snapshot of ``session_id``."""
        return PostgresSnapshots(self, self._validate(session_id))

    def saved_outputs(
        self, session_id: str, limits: SavedOutputLimits = DEFAULT_LIMITS
    ) -> PostgresSavedOutputs:
        """The saved full tool outputs of ``session_id``."""
        return PostgresSavedOutputs(self, self._validate(session_id), limits)

    def attachments(self, session_id: str) -> PostgresAttachments:
        """The attachments of ``session_id`` (``attachment_rows``)."""
        return PostgresAttachments(self, self._validate(session_id))

    def header(self, session_id: str, *, quarantined: bool = False) -> dict[str, Any] | None:
        """The snapshot's metadata without its conversation, or None without one."""
        key_query = NEWEST_QUARANTINED if quarantined else LIVE
        with self.db.transaction(f"reading the header of session {session_id}") as conn:
            row = conn.execute(
                f"SELECT header::text FROM snapshots WHERE session_key = ({key_query})",
                (session_id,),
            ).fetchone()
        if row is None:
            return None
        data = parse_document(self.root / session_id / "snapshot", str(row[0]))
        return data

    def remove_stale_temp_files(self, session_id: str) -> None:
        """A transaction leaves nothing behind."""

    def delete(self, session_id: str) -> None:
        """Delete the live session, its events, snapshot and chats (missing is fine)."""
        self._forget_lease(session_id)
        self.chats.remove_session(session_id)
        with self.db.transaction(f"deleting session {session_id}") as conn:
            conn.execute(
                "DELETE FROM sessions WHERE session_id = %s AND quarantined_at IS NULL",
                (session_id,),
            )

    def quarantine(self, session_id: str, reason: str) -> Path:
        """Set the session aside with ``reason``; its epoch moves on, fencing any writer."""
        self._validate(session_id)
        self._forget_lease(session_id)
        with self.db.transaction(f"quarantining session {session_id}") as conn:
            row = conn.execute(
                "UPDATE sessions SET quarantined_at = clock_timestamp(), quarantine_reason = %s,"
                " epoch = epoch + 1, owner_node = NULL, lease_expires_at = NULL "
                "WHERE session_id = %s AND quarantined_at IS NULL RETURNING session_key",
                (f"{now_rfc3339()} {reason}", session_id),
            ).fetchone()
        if row is None:
            raise FileNotFoundError(f"session {session_id} does not exist")
        self.chats.remove_session(session_id)
        return self.root / "_quarantine" / session_id

    def quarantined(self) -> list[str]:
        """Ids of quarantined sessions (once each)."""
        with self.db.transaction("listing quarantined sessions") as conn:
            rows = conn.execute(
                "SELECT DISTINCT session_id FROM sessions WHERE quarantined_at IS NOT NULL"
            ).fetchall()
        return sorted(str(r[0]) for r in rows)

    def quarantine_reason(self, session_id: str) -> str | None:
        """Why ``session_id`` is quarantined (its newest copy), or None."""
        with self.db.transaction(f"reading why session {session_id} is quarantined") as conn:
            row = conn.execute(
                "SELECT quarantine_reason FROM sessions WHERE session_key = "
                f"({NEWEST_QUARANTINED})",
                (session_id,),
            ).fetchone()
        if row is None:
            return None
        return str(row[0] or "") or "(no reason recorded)"

    def restore(self, session_id: str) -> Path:
        """Bring the newest quarantined copy back (refused over a live session)."""
        try:
            with self.db.transaction(f"restoring session {session_id}") as conn:
                row = conn.execute(
                    "UPDATE sessions SET quarantined_at = NULL, epoch = epoch + 1 "
                    f"WHERE session_key = ({NEWEST_QUARANTINED}) RETURNING 1",
                    (session_id,),
                ).fetchone()
        except psycopg.errors.UniqueViolation:
            raise FileExistsError(f"a live session already has the id {session_id}") from None
        if row is None:
            raise FileNotFoundError(f"session {session_id} is not quarantined")
        return self.root / session_id
