"""``SavedOutputStorage`` in PostgreSQL: one session's saved full tool outputs as rows.

The same rules as ``store.saved_outputs`` (ids validated before use, one output capped at
``max_output_bytes``, then retention by the ULID's time and the session's byte cap, oldest
first, never the one just saved), in one transaction per save, fenced by the session's lease
like every write of the session. Rows belong to the session's row, so deleting the session
takes its outputs along, and a quarantined copy keeps its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from duragent.store.saved_outputs import (
    SavedOutputLimits,
    SavedOutputNotFoundError,
    capped_bytes,
    is_output_id,
    new_output_id,
    swept,
)

if TYPE_CHECKING:
    from duragent.store.postgres.sessions import PostgresSessionStore

__all__ = ["PostgresSavedOutputs"]


_LIVE = "SELECT session_key FROM sessions WHERE session_id = %s AND quarantined_at IS NULL"


class PostgresSavedOutputs:
    """One session's saved outputs (see module docstring)."""

    def __init__(
        self,
        store: PostgresSessionStore,
        session_id: str,
        limits: SavedOutputLimits,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._db = store.db
        self.session_id = session_id
        self.limits = limits
        self._clock = clock

    def new_id(self) -> str:
        """An id for an output about to be saved."""
        return new_output_id()

    def save(self, output_id: str, text: str) -> None:
        """Keep ``text`` under ``output_id``, then apply retention and the size cap."""
        if not is_output_id(output_id):
            raise SavedOutputNotFoundError(output_id)
        data = capped_bytes(text, self.limits)
        with self._db.transaction(f"saving an output of {self.session_id}") as conn:
            key = self._store.fenced(conn, self.session_id).session_key
            conn.execute(
                "INSERT INTO saved_outputs (session_key, output_id, content) VALUES (%s, %s, %s) "
                "ON CONFLICT (session_key, output_id) DO UPDATE SET content = excluded.content",
                (key, output_id, data),
            )
            rows = conn.execute(
                "SELECT output_id, octet_length(content) FROM saved_outputs WHERE session_key = %s",
                (key,),
            ).fetchall()
            gone = swept(
                {str(r[0]): int(r[1]) for r in rows},
                output_id,
                int(self._clock() * 1000),
                self.limits,
            )
            if gone:
                conn.execute(
                    "DELETE FROM saved_outputs WHERE session_key = %s AND output_id = ANY(%s)",
                    (key, gone),
                )

    def read(self, output_id: str) -> str:
        """The saved text (``SavedOutputNotFoundError`` when there is none by that id here)."""
        if not is_output_id(output_id):
            raise SavedOutputNotFoundError(output_id)
        with self._db.transaction(f"reading an output of {self.session_id}") as conn:
            row = conn.execute(
                f"SELECT content FROM saved_outputs WHERE session_key = ({_LIVE}) "
                "AND output_id = %s",
                (self.session_id, output_id),
            ).fetchone()
        if row is None:
            raise SavedOutputNotFoundError(output_id)
        return bytes(row[0]).decode("utf-8", errors="replace")

    def ids(self) -> list[str]:
        """Every saved id, oldest first."""
        with self._db.transaction(f"listing the outputs of {self.session_id}") as conn:
            rows = conn.execute(
                f"SELECT output_id FROM saved_outputs WHERE session_key = ({_LIVE})",
                (self.session_id,),
            ).fetchall()
        return sorted(str(r[0]) for r in rows)
