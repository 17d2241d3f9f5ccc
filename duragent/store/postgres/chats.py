"""``ChatMap`` in PostgreSQL: the ``chats`` table, with a local copy for reads.

The registry reads the map on the event loop, where a query would block; so the map is
loaded at ``open`` and written through (database first: the copy never runs ahead of what is
stored). With several nodes another node may map a chat (or end its session) meanwhile, so
the registry finds a chat's session with ``fetch`` (a query, in a thread): read-through,
and the local copy follows what it read. A row the code cannot use (its session id names no
possible session: ``chat_index.check_entry``) is skipped at every read and reported
(``skipped``), never fatal; it stays in the table until the chat is mapped again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from duragent.store.chat_index import ChatKey, check_entry
from duragent.store.postgres.connection import Database

__all__ = ["PostgresChats"]

log = logging.getLogger(__name__)


class PostgresChats:
    """``ChatMap``: the ``chats`` table, with a local copy for reads (see module docstring)."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._lock = threading.Lock()
        self._map: dict[ChatKey, str] = {}
        self._skipped: dict[ChatKey, dict[str, str]] = {}

    def load(self) -> None:
        """Read every mapping; rows the code cannot use are skipped and reported."""
        with self._db.transaction("loading the chat map") as conn:
            rows = conn.execute("SELECT gateway, chat_id, agent, session_id FROM chats").fetchall()
        fresh: dict[ChatKey, str] = {}
        with self._lock:
            self._skipped = {}
            for g, c, a, s in rows:
                found = self._usable_locked((g, c, a), s)
                if found is not None:
                    fresh[found[0]] = found[1]
            self._map = fresh

    def skipped(self) -> list[dict[str, str]]:
        """Rows skipped by the last reads (``/readyz``, ``doctor``)."""
        with self._lock:
            return list(self._skipped.values())

    def _usable_locked(
        self, key: tuple[object, ...], session_id: object
    ) -> tuple[ChatKey, str] | None:
        """The row as a mapping, or None (recorded in ``skipped`` and logged once)."""
        try:
            return check_entry(key, session_id), str(session_id)
        except ValueError as exc:
            where = tuple(str(p) for p in key)
            if where not in self._skipped:
                log.error("chats table: row %s skipped: %s", list(where), exc)
            self._skipped[(where[0], where[1], where[2])] = {
                "record": f"chats table row {list(where)}",
                "reason": str(exc),
            }
            return None

    def get(self, key: ChatKey) -> str | None:
        """The session serving ``key``."""
        with self._lock:
            return self._map.get(key)

    def fetch(self, key: ChatKey) -> str | None:
        """The session serving ``key`` as stored now; the local copy is updated to it."""
        with self._db.transaction("reading the chat map") as conn:
            row = conn.execute(
                "SELECT session_id FROM chats WHERE gateway = %s AND chat_id = %s AND agent = %s",
                key,
            ).fetchone()
        with self._lock:
            usable = self._usable_locked(key, row[0]) if row else None
            found = usable[1] if usable else None
            if found is None:
                self._map.pop(key, None)
            else:
                self._map[key] = found
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
