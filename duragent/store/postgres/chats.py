"""``ChatMap`` in PostgreSQL: the ``chats`` table, with a local copy for reads.

The registry reads the map on the event loop, where a query would block; so the map is
loaded at ``open`` and written through (database first: the copy never runs ahead of what is
stored). With several nodes another node may map a chat (or end its session) meanwhile, so
the registry finds a chat's session with ``fetch`` (a query, in a thread): read-through,
and the local copy follows what it read.

A row the code cannot use (its key or session id names no possible session:
``chat_index.check_entry``) is moved to the ``chats_quarantine`` table (schema 5) with why,
in one transaction (``DELETE … RETURNING`` feeding the ``INSERT``: two nodes reading it at
once move it once), wherever it is read (``load``, ``fetch``); it is reported (``skipped``,
``chat_problems`` for ``doctor``) until someone deletes it there. Left in ``chats`` it would
block its chat: a new session's conditional mapping (``claim``) never replaces a row it did
not find, so every message would be served from the bad row's "session". A row whose
session no longer exists (deleted, or quarantined by hand) is valid and stays: the chat's
next message starts a new session that replaces it (``SessionRegistry.for_chat``); until
then it is reported too.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

from psycopg import Connection
from psycopg.rows import TupleRow

from duragent.core.events import now_rfc3339
from duragent.store.chat_index import ChatKey, check_entry
from duragent.store.postgres.connection import Database

__all__ = ["PostgresChats", "chat_problems"]

log = logging.getLogger(__name__)

_ROWS = (
    "SELECT c.gateway, c.chat_id, c.agent, c.session_id, "
    "NOT EXISTS (SELECT 1 FROM sessions s WHERE s.session_id = c.session_id "
    "AND s.quarantined_at IS NULL), "
    "EXISTS (SELECT 1 FROM sessions s WHERE s.session_id = c.session_id "
    "AND s.quarantined_at IS NOT NULL) "
    "FROM chats c"
)
_MOVE_ASIDE = (
    "WITH moved AS (DELETE FROM chats WHERE gateway = %s AND chat_id = %s AND agent = %s "
    "AND session_id = %s RETURNING gateway, chat_id, agent, session_id) "
    "INSERT INTO chats_quarantine (gateway, chat_id, agent, session_id, reason) "
    "SELECT gateway, chat_id, agent, session_id, %s FROM moved RETURNING quarantine_key"
)
_SET_ASIDE = (
    "SELECT quarantine_key, gateway, chat_id, agent, reason FROM chats_quarantine "
    "ORDER BY quarantine_key"
)


def _record(key: Iterable[object]) -> str:
    return f"chats table row {[str(p) for p in key]}"


def _aside_record(row: tuple[Any, ...]) -> dict[str, str]:
    """A ``chats_quarantine`` row as ``skipped`` reports it."""
    return {
        "record": _record(row[1:4]),
        "reason": str(row[4]),
        "moved_to": f"chats_quarantine table row {row[0]}",
    }


def _gone_record(key: ChatKey, session_id: str, quarantined: bool) -> dict[str, str]:
    where = "quarantined" if quarantined else "no live row in sessions"
    return {
        "record": _record(key),
        "reason": f"its session {session_id} no longer exists ({where}); the chat's next "
        "message starts a new session, which replaces this row",
    }


def _move_aside(
    conn: Connection[TupleRow], key: tuple[object, ...], session_id: object, why: str
) -> list[dict[str, str]]:
    """Move the row (if it still holds ``session_id``) to ``chats_quarantine``: its record.

    Empty when another node moved it (or someone changed it) first.
    """
    reason = f"{now_rfc3339()} {why}"
    row = conn.execute(_MOVE_ASIDE, (*key, session_id, reason)).fetchone()
    return [] if row is None else [_aside_record((row[0], *key, reason))]


def _log_moved(moved: list[dict[str, str]]) -> None:
    for record in moved:
        log.error("%s moved to %s: %s", record["record"], record["moved_to"], record["reason"])


def _problem(key: tuple[object, ...], session_id: object) -> str | None:
    """Why the row cannot be used, or None."""
    try:
        check_entry(key, session_id)
    except ValueError as exc:
        return str(exc)
    return None


def chat_problems(db: Database) -> list[dict[str, str]]:
    """What the server would move aside, what it did, and rows whose session is gone.

    Read only (``doctor``): ``record`` and ``reason`` each (``moved_to`` for rows already in
    ``chats_quarantine``). Needs schema 5.
    """
    with db.transaction("reading the chat map") as conn:
        rows = conn.execute(_ROWS).fetchall()
        aside = conn.execute(_SET_ASIDE).fetchall()
    found = []
    for g, c, a, s, gone, quarantined in rows:
        problem = _problem((g, c, a), s)
        if problem is not None:
            found.append({"record": _record((g, c, a)), "reason": problem})
        elif gone:
            found.append(_gone_record((g, c, a), s, quarantined))
    return found + [_aside_record(row) for row in aside]


class PostgresChats:
    """``ChatMap``: the ``chats`` table, with a local copy for reads (see module docstring)."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._lock = threading.Lock()
        self._map: dict[ChatKey, str] = {}
        self._aside: dict[str, dict[str, str]] = {}
        self._gone: dict[ChatKey, tuple[str, dict[str, str]]] = {}

    def load(self) -> None:
        """Read every mapping; rows the code cannot use are moved aside and reported."""
        fresh: dict[ChatKey, str] = {}
        gone: dict[ChatKey, tuple[str, dict[str, str]]] = {}
        moved: list[dict[str, str]] = []
        with self._db.transaction("loading the chat map") as conn:
            rows = conn.execute(_ROWS).fetchall()
            for g, c, a, s, missing, quarantined in rows:
                problem = _problem((g, c, a), s)
                if problem is not None:
                    moved += _move_aside(conn, (g, c, a), s, problem)
                    continue
                fresh[(g, c, a)] = s
                if missing:
                    gone[(g, c, a)] = (s, _gone_record((g, c, a), s, quarantined))
            aside = conn.execute(_SET_ASIDE).fetchall()
        if gone:
            log.warning(
                "chats table: %d chat(s) map to a session that no longer exists (each chat's "
                "next message starts a new session; reported until then)",
                len(gone),
            )
        _log_moved(moved)  # once, by the node that moved them
        with self._lock:
            self._map = fresh
            self._gone = gone
            self._aside = {r["moved_to"]: r for r in map(_aside_record, aside)}

    def skipped(self) -> list[dict[str, str]]:
        """Rows moved aside, and rows whose session is gone (``/readyz``)."""
        with self._lock:
            gone = [r for key, (sid, r) in self._gone.items() if self._map.get(key) == sid]
            return list(self._aside.values()) + gone

    def get(self, key: ChatKey) -> str | None:
        """The session serving ``key``."""
        with self._lock:
            return self._map.get(key)

    def fetch(self, key: ChatKey) -> str | None:
        """The session serving ``key`` as stored now; the local copy is updated to it.

        A row the code cannot use is moved aside (then the chat maps nothing).
        """
        with self._db.transaction("reading the chat map") as conn:
            row = conn.execute(
                "SELECT session_id FROM chats WHERE gateway = %s AND chat_id = %s AND agent = %s",
                key,
            ).fetchone()
            found = str(row[0]) if row else None
            problem = _problem(key, found) if row else None
            moved = _move_aside(conn, key, found, problem) if problem is not None else []
        if problem is not None:
            found = None
            _log_moved(moved)
        with self._lock:
            self._aside.update((r["moved_to"], r) for r in moved)
            if found is None:
                self._map.pop(key, None)
            else:
                self._map[key] = found
        return found

    def fetch_chat(self, gateway: str, chat_id: str) -> list[tuple[ChatKey, str]]:
        """Every agent's mapping of one chat as stored now, in one read.

        As ``fetch`` reads one key: a row the code cannot use is moved aside, and the local
        copy is updated (mappings the table no longer has go from it too).
        """
        found: list[tuple[ChatKey, str]] = []
        moved: list[dict[str, str]] = []
        with self._db.transaction("reading the chat map") as conn:
            rows = conn.execute(
                "SELECT agent, session_id FROM chats WHERE gateway = %s AND chat_id = %s "
                "ORDER BY agent",
                (gateway, chat_id),
            ).fetchall()
            for agent, session_id in rows:
                key = (gateway, chat_id, str(agent))
                problem = _problem(key, session_id)
                if problem is None:
                    found.append((key, str(session_id)))
                else:
                    moved += _move_aside(conn, key, session_id, problem)
        _log_moved(moved)
        with self._lock:  # mappings this copy holds that the table no longer has go too
            self._aside.update((r["moved_to"], r) for r in moved)
            for key in [k for k in self._map if k[:2] == (gateway, chat_id)]:
                del self._map[key]
            self._map.update(found)
        return found

    def items(self) -> list[tuple[ChatKey, str]]:
        """A copy of every mapping."""
        with self._lock:
            return list(self._map.items())

    def set(self, key: ChatKey, session_id: str | None) -> None:
        """Write the mapping to the database, then to the local copy."""
        with self._db.transaction("writing the chat map") as conn:
            if session_id:
                conn.execute(
                    "INSERT INTO chats (gateway, chat_id, agent, session_id) "
                    "VALUES (%s, %s, %s, %s) ON CONFLICT (gateway, chat_id, agent) "
                    "DO UPDATE SET session_id = excluded.session_id",
                    (*key, session_id),
                )
            else:
                conn.execute(
                    "DELETE FROM chats WHERE gateway = %s AND chat_id = %s AND agent = %s", key
                )
        with self._lock:
            if session_id:
                self._map[key] = session_id
            else:
                self._map.pop(key, None)

    def claim(self, key: ChatKey, session_id: str, replacing: str | None) -> str:
        """Map ``key`` to ``session_id`` only if it still maps to ``replacing``; the winner.

        ``replacing`` is what the caller found (None: unmapped; else the session it found
        unusable). Two nodes making a chat's first session at once both find it unmapped:
        the unique key lets one insert win, and the other is told the winner's session.
        """
        with self._db.transaction("writing the chat map") as conn:
            row = conn.execute(
                "INSERT INTO chats AS c (gateway, chat_id, agent, session_id) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (gateway, chat_id, agent) "
                "DO UPDATE SET session_id = excluded.session_id WHERE c.session_id = %s "
                "RETURNING session_id",
                (*key, session_id, replacing),
            ).fetchone()
            if row is None:  # another node mapped it first (a new statement sees its commit)
                row = conn.execute(
                    "SELECT session_id FROM chats "
                    "WHERE gateway = %s AND chat_id = %s AND agent = %s",
                    key,
                ).fetchone()
        winner = str(row[0]) if row else session_id
        with self._lock:
            self._map[key] = winner
        return winner

    def remove_session(self, session_id: str) -> None:
        """Unmap every chat served by ``session_id``."""
        with self._db.transaction("writing the chat map") as conn:
            conn.execute("DELETE FROM chats WHERE session_id = %s", (session_id,))
        with self._lock:
            self._map = {k: v for k, v in self._map.items() if v != session_id}

    def rebuild(self, entries: Iterable[tuple[ChatKey, str]]) -> None:
        """Replace the whole mapping in one transaction."""
        fresh = dict(entries)
        with self._db.transaction("rebuilding the chat map") as conn:
            conn.execute("DELETE FROM chats")
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO chats (gateway, chat_id, agent, session_id) "
                    "VALUES (%s, %s, %s, %s)",
                    [(*k, v) for k, v in fresh.items()],
                )
        with self._lock:
            self._map = fresh
