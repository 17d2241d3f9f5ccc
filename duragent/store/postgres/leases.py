"""Session leases and the epoch fence (the foundation of issue 24's item 2).

A session's row carries ``owner_node``, ``epoch`` and ``lease_expires_at``. A node *claims*
the session before its first write: the claim succeeds when nobody owns it, when this node
already does, or when the owner's lease has expired, and it always increments the epoch.
Every write then runs, in its own transaction, ``UPDATE sessions … WHERE epoch = <held>``:
the row lock orders the write, and a node whose epoch is no longer the row's (another node
claimed the session after its lease expired, or the session was quarantined) is refused with
``FencedWriteError`` — it must drop the actor, never write again for that session. The same
statement renews the lease; ``renew`` renews every lease a node holds in one statement (the
registry calls it every lease/3, so an idle actor keeps its session). The errors live in
``store.ownership`` (no driver needed to name them).
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg.rows import TupleRow

from duragent.store.ownership import FencedWriteError, LeaseHeldError

__all__ = [
    "FencedWriteError",
    "Lease",
    "LeaseHeldError",
    "claim",
    "fence",
    "release",
    "renew",
]


@dataclass(frozen=True, slots=True)
class Lease:
    """What a node holds after a claim: the session's row and the epoch it writes under."""

    session_id: str
    session_key: int
    epoch: int
    taken_over: bool = False
    """The claim took the session from a node that no longer serves it (its lease had run
    out): what that node left unfinished is now this node's to finish."""


Conn = psycopg.Connection[TupleRow]


def claim(conn: Conn, session_id: str, node: str, seconds: float) -> Lease:
    """Take the lease of the live session ``session_id`` for ``node`` (see module docstring).

    Creates the session's row when there is none (as a first write creates a folder).
    Raises ``LeaseHeldError`` when another node's lease is still running. ``taken_over``
    on the result: the lease had run out (its node, this one's earlier life included, died
    or was cut off), so the session may hold a turn that node never finished.
    """
    conn.execute(
        "INSERT INTO sessions (session_id) VALUES (%s) "
        "ON CONFLICT (session_id) WHERE quarantined_at IS NULL DO NOTHING",
        (session_id,),
    )
    row = conn.execute(
        "WITH before AS (SELECT session_key, owner_node, lease_expires_at FROM sessions "
        "WHERE session_id = %(sid)s AND quarantined_at IS NULL FOR UPDATE) "
        "UPDATE sessions s SET epoch = s.epoch + 1, owner_node = %(node)s, "
        "lease_expires_at = now() + make_interval(secs => %(secs)s) FROM before "
        "WHERE s.session_key = before.session_key AND (before.owner_node IS NULL "
        "OR before.owner_node = %(node)s OR before.lease_expires_at < now()) "
        "RETURNING s.session_key, s.epoch, "
        "before.owner_node IS NOT NULL AND before.lease_expires_at < now()",
        {"node": node, "secs": seconds, "sid": session_id},
    ).fetchone()
    if row is None:
        held = conn.execute(
            "SELECT owner_node, extract(epoch FROM lease_expires_at - now()) FROM sessions "
            "WHERE session_id = %s AND quarantined_at IS NULL",
            (session_id,),
        ).fetchone()
        owner, expires_in = held if held else ("?", 0.0)
        raise LeaseHeldError(session_id, str(owner), float(expires_in or 0.0))
    return Lease(session_id, int(row[0]), int(row[1]), taken_over=bool(row[2]))


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


def renew(conn: Conn, leases: list[Lease], seconds: float) -> list[Lease]:
    """Renew every lease of ``leases`` still current, in one statement; the ones lost.

    A lease is lost when its epoch is no longer the session's (another node claimed it after
    it expired, or the session was quarantined or deleted): such a session's actor must stop.
    """
    if not leases:
        return []
    rows = conn.execute(
        "UPDATE sessions s SET lease_expires_at = now() + make_interval(secs => %s) "
        "FROM unnest(%s::bigint[], %s::bigint[]) AS held(session_key, epoch) "
        "WHERE s.session_key = held.session_key AND s.epoch = held.epoch "
        "AND s.quarantined_at IS NULL RETURNING s.session_key",
        (seconds, [lease.session_key for lease in leases], [lease.epoch for lease in leases]),
    ).fetchall()
    renewed = {int(row[0]) for row in rows}
    return [lease for lease in leases if lease.session_key not in renewed]
