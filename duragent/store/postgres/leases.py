"""Session leases and the epoch fence (the foundation of issue 24's item 2).

A session's row carries ``owner_node``, ``epoch`` and ``lease_expires_at``. A node *claims*
the session before its first write: the claim succeeds when nobody owns it, when this node
already does, or when the owner's lease has expired, and it always increments the epoch.
Every write then runs, in its own transaction, ``UPDATE sessions … WHERE epoch = <held>``:
the row lock orders the write, and a node whose epoch is no longer the row's (another node
claimed the session after its lease expired, or the session was quarantined) is refused with
``FencedWriteError`` — it must drop the actor, never write again for that session. The same
statement renews the lease. End-to-end enforcement (renewal while idle, take-over, forwarding)
is item 2; the fence itself exists and is tested now.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg.rows import TupleRow

from duragent.errors import DuragentError, StorageError

__all__ = ["FencedWriteError", "Lease", "LeaseHeldError", "claim", "fence", "release"]


class LeaseHeldError(DuragentError):
    """Another live node owns the session (its lease has not expired)."""

    def __init__(self, session_id: str, owner: str, expires: object) -> None:
        self.session_id = session_id
        self.owner = owner
        super().__init__(
            f"session {session_id} is owned by node {owner} until {expires}: send the request "
            "to that node, or wait for its lease to expire"
        )


class FencedWriteError(StorageError):
    """A write under an epoch that is no longer the session's: this node lost the session.

    Nothing was written. The owner must stop its actor for the session (another node, or a
    newer actor of this one, owns it now) and never retry the write under the old epoch.
    """

    def __init__(self, session_id: str, held: int, current: int | None, owner: str | None) -> None:
        self.session_id = session_id
        self.held_epoch = held
        self.current_epoch = current
        now = "is no longer live" if current is None else f"is at epoch {current}"
        by = f" (owned by node {owner})" if owner else ""
        super().__init__(
            f"writing session {session_id}",
            OSError(0, f"stale epoch {held}: the session {now}{by}; this write was refused"),
        )


@dataclass(frozen=True, slots=True)
class Lease:
    """What a node holds after a claim: the session's row and the epoch it writes under."""

    session_id: str
    session_key: int
    epoch: int


Conn = psycopg.Connection[TupleRow]


def claim(conn: Conn, session_id: str, node: str, seconds: float) -> Lease:
    """Take the lease of the live session ``session_id`` for ``node`` (see module docstring).

    Creates the session's row when there is none (as a first write creates a folder).
    Raises ``LeaseHeldError`` when another node's lease is still running.
    """
    conn.execute(
        "INSERT INTO sessions (session_id) VALUES (%s) "
        "ON CONFLICT (session_id) WHERE quarantined_at IS NULL DO NOTHING",
        (session_id,),
    )
    row = conn.execute(
        "UPDATE sessions SET epoch = epoch + 1, owner_node = %(node)s, "
        "lease_expires_at = now() + make_interval(secs => %(secs)s) "
        "WHERE session_id = %(sid)s AND quarantined_at IS NULL AND (owner_node IS NULL "
        "OR owner_node = %(node)s OR lease_expires_at < now()) "
        "RETURNING session_key, epoch",
        {"node": node, "secs": seconds, "sid": session_id},
    ).fetchone()
    if row is None:
        held = conn.execute(
            "SELECT owner_node, lease_expires_at FROM sessions "
            "WHERE session_id = %s AND quarantined_at IS NULL",
            (session_id,),
        ).fetchone()
        owner, expires = held if held else ("?", "?")
        raise LeaseHeldError(session_id, str(owner), expires)
    return Lease(session_id, int(row[0]), int(row[1]))


def fence(conn: Conn, lease: Lease, seconds: float, *, log_written: bool = False) -> None:
    """Check ``lease`` is still the session's in this transaction, lock the row, renew it.

    Raises ``FencedWriteError`` when it is not (nothing is written).
    """
    row = conn.execute(
        "UPDATE sessions SET lease_expires_at = now() + make_interval(secs => %s), "
        "log_written = log_written OR %s "
        "WHERE session_key = %s AND epoch = %s AND quarantined_at IS NULL RETURNING 1",
        (seconds, log_written, lease.session_key, lease.epoch),
    ).fetchone()
    if row is None:
        now = conn.execute(
            "SELECT epoch, owner_node, quarantined_at FROM sessions WHERE session_key = %s",
            (lease.session_key,),
        ).fetchone()
        live = now is not None and now[2] is None
        raise FencedWriteError(
            lease.session_id,
            lease.epoch,
            int(now[0]) if live and now else None,
            str(now[1]) if live and now and now[1] else None,
        )


def release(conn: Conn, lease: Lease) -> None:
    """Give the lease up (the actor stopped); the epoch stays, so old writers stay fenced."""
    conn.execute(
        "UPDATE sessions SET owner_node = NULL, lease_expires_at = NULL "
        "WHERE session_key = %s AND epoch = %s",
        (lease.session_key, lease.epoch),
    )
