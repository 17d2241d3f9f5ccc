"""Appends whose COMMIT was sent but never acknowledged: committed or not, nobody knows.

A connection that drops between sending ``COMMIT`` and reading its answer leaves the
transaction's outcome unknown to the client. The journal was told the append failed, so it
reuses those seqs (a durable event is withdrawn, a batch is retried). ``PostgresSessionStore``
keeps, per session, the first seq in doubt: its next fenced write deletes any live rows from
that seq on (the lease guarantees only this node can have written them, and they were reported
as not written), and its reads leave them out meanwhile. So a failed append leaves nothing
behind, as the ``SessionLog`` protocol promises, even across a lost commit.
"""

from __future__ import annotations

import threading

__all__ = ["CommitsInDoubt"]


class CommitsInDoubt:
    """Per session id, the first seq of a failed append that may have committed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._first_seq: dict[str, int] = {}

    def get(self, session_id: str) -> int | None:
        """The first seq in doubt for ``session_id``, or None."""
        with self._lock:
            return self._first_seq.get(session_id)

    def add(self, session_id: str, first_seq: int) -> None:
        """An append from ``first_seq`` on failed on the way to the database: it may be there."""
        with self._lock:
            held = self._first_seq.get(session_id, first_seq)
            self._first_seq[session_id] = min(first_seq, held)

    def settled(self, session_id: str, seen: int | None) -> None:
        """A fenced write that deleted from ``seen`` on (read before it began) committed."""
        if seen is None:
            return
        with self._lock:
            if self._first_seq.get(session_id) == seen:
                del self._first_seq[session_id]

    def forget(self, session_id: str) -> None:
        """The session was deleted, quarantined or given up: nothing to settle here."""
        with self._lock:
            self._first_seq.pop(session_id, None)
