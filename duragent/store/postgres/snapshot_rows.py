"""A session's snapshot as one row of ``snapshots``, replaced in a fenced transaction.

Its own module so ``sessions`` stays the store (lifecycle, leases, the session rows) and each
per-session view (this one, ``event_rows``) reads on its own. The SQL that finds a session's
live or newest quarantined row, and the bounded JSON parse of a stored document, are shared
with ``sessions`` and ``event_rows`` from here: one definition of "the live session".
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duragent.core.nesting import loads_bounded
from duragent.core.snapshot import SessionSnapshot
from duragent.store.snapshot_file import SnapshotCorruptError

if TYPE_CHECKING:
    from duragent.store.postgres.sessions import PostgresSessionStore

__all__ = ["LIVE", "NEWEST_QUARANTINED", "PostgresSnapshots", "parse_document"]

LIVE = "SELECT session_key FROM sessions WHERE session_id = %s AND quarantined_at IS NULL"
"""The key of the live session with an id (at most one: a partial unique index)."""
NEWEST_QUARANTINED = (
    "SELECT session_key FROM sessions WHERE session_id = %s AND quarantined_at IS NOT NULL "
    "ORDER BY quarantined_at DESC, session_key DESC LIMIT 1"
)
"""The key of the newest quarantined copy of a session id (an id may be quarantined twice)."""


def _dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def parse_document(where: Path, text: str) -> dict[str, Any]:
    """A stored snapshot or header as a mapping (``SnapshotCorruptError`` if it is not one)."""
    try:
        data = loads_bounded(text)
    except ValueError as exc:
        raise SnapshotCorruptError(where, str(exc)) from None
    if not isinstance(data, dict):
        raise SnapshotCorruptError(where, "not a mapping")
    return data


class PostgresSnapshots:
    """``SessionSnapshots`` of one session: one row, replaced in a fenced transaction."""

    def __init__(self, store: PostgresSessionStore, session_id: str) -> None:
        self._store = store
        self._db = store.db
        self.session_id = session_id
        self.path = store.root / session_id / "snapshot"
        self.last_size = 0
        self.io_seconds = 0.0

    def write(self, snapshot: SessionSnapshot) -> None:
        """Replace the snapshot (a reader sees the old row or the new one)."""
        data = snapshot.to_dict()
        body = _dumps(data)
        header = _dumps({k: v for k, v in data.items() if k != "conversation"})
        began = time.perf_counter()
        doubt = self._store.in_doubt.get(self.session_id)
        with self._db.transaction(f"writing the snapshot of {self.session_id}") as conn:
            lease = self._store.fenced(conn, self.session_id)
            conn.execute(
                "INSERT INTO snapshots (session_key, header, body) VALUES (%s, %s, %s) "
                "ON CONFLICT (session_key) DO UPDATE SET header = excluded.header, "
                "body = excluded.body, written_at = now()",
                (lease.session_key, header, body),
            )
        self._store.in_doubt.settled(self.session_id, doubt)
        self.io_seconds += time.perf_counter() - began
        self.last_size = len(body)

    def read(self) -> SessionSnapshot | None:
        """The snapshot, None without one, ``SnapshotCorruptError`` when it is not one."""
        with self._db.transaction(f"reading the snapshot of {self.session_id}") as conn:
            row = conn.execute(
                f"SELECT body::text FROM snapshots WHERE session_key = ({LIVE})",
                (self.session_id,),
            ).fetchone()
        if row is None:
            return None
        data = parse_document(self.path, str(row[0]))
        try:
            return SessionSnapshot.from_dict(data)
        except (ValueError, TypeError, KeyError) as exc:
            raise SnapshotCorruptError(self.path, str(exc)) from None

    def exists(self) -> bool:
        """Whether the live session has a snapshot."""
        with self._db.transaction(f"checking the snapshot of {self.session_id}") as conn:
            row = conn.execute(
                f"SELECT 1 FROM snapshots WHERE session_key = ({LIVE})",
                (self.session_id,),
            ).fetchone()
        return row is not None
