"""A session's event log as rows of ``events``: one owner appends (fenced), anyone reads.

Split from ``sessions`` (the store itself) because the log is where the lease fence and a
lost COMMIT meet (``doubt``): an append is one fenced transaction, a seq stored twice is
refused by the primary key, and rows of a commit this node reported as failed are hidden
from its reads until the next fenced write deletes them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import psycopg

from duragent.core.events import Event
from duragent.errors import DuragentError, StorageError
from duragent.store.event_log import ReadReport
from duragent.store.postgres.snapshot_rows import LIVE

if TYPE_CHECKING:
    from duragent.store.postgres.sessions import PostgresSessionStore

__all__ = ["EventSeqConflictError", "PostgresLog"]


class EventSeqConflictError(DuragentError, ValueError):
    """An append repeated a seq the session already has (nothing of it was written)."""


class PostgresLog:
    """``SessionLog`` of one session: rows of ``events`` (one owner writes; anyone reads)."""

    def __init__(self, store: PostgresSessionStore, session_id: str) -> None:
        self._store = store
        self._db = store.db
        self.session_id = session_id
        self.path = store.root / session_id / "events"
        self.appended_bytes = 0
        self.io_seconds = 0.0

    def append(self, events: Sequence[Event]) -> None:
        """Insert ``events`` in one fenced transaction: all or nothing."""
        if not events:
            return
        lines = [e.to_json() for e in events]
        began = time.perf_counter()
        doubt = self._store.in_doubt.get(self.session_id)
        try:
            with self._db.transaction(f"appending to session {self.session_id}") as conn:
                lease = self._store.fenced(conn, self.session_id, log=True)
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO events (session_key, seq, event) VALUES (%s, %s, %s)",
                        [
                            (lease.session_key, e.seq, line)
                            for e, line in zip(events, lines, strict=True)
                        ],
                    )
        except psycopg.errors.UniqueViolation:
            raise EventSeqConflictError(
                f"session {self.session_id} already has an event with one of the seqs "
                f"{[e.seq for e in events]}: nothing was appended"
            ) from None
        except StorageError as exc:
            if isinstance(exc.cause, ConnectionError):  # the COMMIT may have got through
                self._store.in_doubt.add(self.session_id, events[0].seq)
            raise
        self._store.in_doubt.settled(self.session_id, doubt)
        self.io_seconds += time.perf_counter() - began
        self.appended_bytes += sum(len(line) + 1 for line in lines)

    def _select(
        self, where: str, params: tuple[object, ...], *, first: bool = False
    ) -> list[str] | None:
        """Event texts of the live session matching ``where``; None when no log was written.

        ``first``: only the oldest one.
        """
        with self._db.transaction(f"reading session {self.session_id}") as conn:
            row = conn.execute(
                "SELECT session_key, log_written FROM sessions "
                "WHERE session_id = %s AND quarantined_at IS NULL",
                (self.session_id,),
            ).fetchone()
            if row is None or not row[1]:
                return None
            rows = conn.execute(
                f"SELECT event::text FROM events WHERE session_key = %s AND {where} ORDER BY seq"
                + (" LIMIT 1" if first else ""),
                (row[0], *params),
            ).fetchall()
        return [str(r[0]) for r in rows]

    def read(self, after_seq: int = 0) -> tuple[list[Event], ReadReport]:
        """Live events with ``seq > after_seq``, in order (a row that does not parse is counted)."""
        report = ReadReport()
        texts = self._select("NOT archived AND seq > %s", (after_seq,))
        if texts is None:
            report.missing = True
            return [], report
        events = _events(texts, report)
        doubt = self._store.in_doubt.get(self.session_id)
        if doubt is not None:  # rows of a lost commit this node reported as not written
            events = [e for e in events if e.seq < doubt]
        return events, report

    def read_archive(self) -> list[Event]:
        """Every archived event, in order."""
        return _events(self._select("archived", ()) or [], ReadReport())

    def first_archived(self, event_type: str) -> Event | None:
        """The oldest archived event of ``event_type`` (one row read)."""
        texts = self._select("archived AND event->>'type' = %s", (event_type,), first=True)
        events = _events(texts or [], ReadReport())
        return events[0] if events else None

    def last_seq(self) -> int | None:
        """The newest live seq (0: none; None: the database cannot be asked now)."""
        try:
            with self._db.transaction(f"reading the last seq of {self.session_id}") as conn:
                row = conn.execute(
                    f"SELECT coalesce(max(seq), 0) FROM events WHERE session_key = ({LIVE}) "
                    "AND NOT archived",
                    (self.session_id,),
                ).fetchone()
        except StorageError:
            return None
        return int(row[0]) if row else 0

    def roll_over(self, up_to_seq: int, *, archive: bool) -> int:
        """Mark (archive) or delete (discard) live events ``<= up_to_seq``, fenced."""
        doubt = self._store.in_doubt.get(self.session_id)
        with self._db.transaction(f"rolling over session {self.session_id}") as conn:
            lease = self._store.fenced(conn, self.session_id)
            verb = "UPDATE events SET archived = true" if archive else "DELETE FROM events"
            cur = conn.execute(
                f"{verb} WHERE session_key = %s AND NOT archived AND seq <= %s",
                (lease.session_key, up_to_seq),
            )
            rolled = max(cur.rowcount, 0)
        self._store.in_doubt.settled(self.session_id, doubt)
        return rolled

    def close(self) -> None:
        """Release this node's lease on the session (the actor stopped)."""
        with self._store._lock:
            lease = self._store._leases.get(self.session_id)
        if lease is not None:
            self._store.drop_lease(lease)


def _events(texts: list[str], report: ReadReport) -> list[Event]:
    events = []
    for text in texts:
        try:
            events.append(Event.from_json(text))
        except ValueError:
            report.skipped_malformed += 1
    return events
