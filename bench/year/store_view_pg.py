"""``PgView``: the bench's reads (``store_view.StoreView``) as SQL on a shared schema.

The tables are the PostgreSQL store's (``duragent/store/postgres/migrations``): run logs in
``schedule_runs``, schedule documents in ``schedules``, events in ``events``, snapshot headers
in ``snapshots``, attachment blobs in ``attachments``. Each read is one query on one
connection of its own, in autocommit with ``default_transaction_read_only``: the bench never
takes a lease nor holds a transaction open against the nodes it measures. The stored JSON is
kept verbatim (``json``, not ``jsonb``), so a row reads back as the line a file would hold.

The clock's brake asks for the newest run line of each declared schedule every tick
(~10 ms); that read is cached for ``cache_seconds`` (50 ms), which a due time spends
anyway between the scheduler's look and its ``running`` line.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import psycopg

from duragent.store.postgres.connection import check_schema_name

__all__ = ["PgView"]

Run = dict[str, Any]

_LAST_RUNS = (
    "SELECT s.id, r.run::text FROM unnest(%s::text[]) AS s(id) LEFT JOIN LATERAL "
    "(SELECT run FROM schedule_runs WHERE schedule_id = s.id ORDER BY run_no DESC LIMIT 1) r "
    "ON true"
)
"""One index probe per schedule (the primary key is (schedule_id, run_no)), not a scan of
every schedule's runs as ``DISTINCT ON`` would do."""
_SESSION_CHATS = (
    "SELECT s.session_id, n.header->'config'->>'gateway_chat_id', "
    "(SELECT e.event->>'gateway_chat_id' FROM events e WHERE e.session_key = s.session_key "
    "AND NOT e.archived ORDER BY e.seq LIMIT 1) "
    "FROM sessions s LEFT JOIN snapshots n ON n.session_key = s.session_key "
    "WHERE s.quarantined_at IS NULL AND s.session_id LIKE 'session\\_%%' ORDER BY s.session_id"
)
"""The snapshot's chat, else the first live event's: as ``store_view.chat_of`` reads files."""
_RECORDED = (
    "SELECT DISTINCT m[1] FROM events, "
    "regexp_matches(event::text, '\"platform_message_id\":\\s*\"(\\d+)\"', 'g') AS m "
    "WHERE event::text LIKE '%%platform_message_id%%'"
)
"""The pattern ``campaign_workspace.recorded_message_ids`` finds in each file line, on the
same text (the row is the line), of every session's events: live, archived, quarantined."""
_DB_BYTES = (
    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c "
    "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'"
)
"""Every table of the schema with its indexes and TOAST (the attachments' bytes)."""


class PgView:
    """The store in ``schema`` of the database at ``dsn``, read only (module docstring)."""

    def __init__(self, dsn: str, schema: str, *, cache_seconds: float = 0.05) -> None:
        self.dsn = dsn
        self.schema = check_schema_name(schema)
        self.cache_seconds = cache_seconds
        self._conn: psycopg.Connection[tuple[Any, ...]] | None = None
        self._lasts: dict[tuple[str, ...], tuple[float, dict[str, Run | None]]] = {}

    def _rows(self, query: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """The query's rows; a connection lost meanwhile (a database restart) is made again
        once."""
        for attempt in (1, 2):
            try:
                return self._connection().execute(query, params).fetchall()
            except psycopg.OperationalError:
                self.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _connection(self) -> psycopg.Connection[tuple[Any, ...]]:
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(
                self.dsn,
                autocommit=True,
                connect_timeout=5,
                application_name=f"bench-view:{self.schema}",
                options=f"-c search_path={self.schema} -c default_transaction_read_only=on",
            )
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def last_runs(self, schedule_ids: Sequence[str]) -> dict[str, Run | None]:
        """Cached ``cache_seconds`` (module docstring); a row is never half written."""
        key = tuple(schedule_ids)
        now = time.monotonic()
        cached = self._lasts.get(key)
        if cached is not None and now - cached[0] < self.cache_seconds:
            return cached[1]
        rows = self._rows(_LAST_RUNS, (list(key),))
        lasts = {str(sid): None if text is None else _run(text) for sid, text in rows}
        self._lasts[key] = (now, lasts)
        return lasts

    def runs(self, schedule_id: str) -> list[Run]:
        """Every stored run, oldest first (the store keeps the newest 1,000)."""
        rows = self._rows(
            "SELECT run::text FROM schedule_runs WHERE schedule_id = %s ORDER BY run_no",
            (schedule_id,),
        )
        runs = [json.loads(text) for (text,) in rows]
        return [run for run in runs if isinstance(run, dict)]

    def made_schedules(self) -> dict[str, dict[str, Any]]:
        rows = self._rows(
            "SELECT schedule_id, schedule::text FROM schedules "
            "WHERE schedule_id LIKE 'sched\\_%%' ORDER BY schedule_id",
            (),
        )
        return {str(sid): json.loads(text) or {} for sid, text in rows}

    def session_chats(self) -> dict[str, int | None]:
        chats: dict[str, int | None] = {}
        for sid, snapshot_chat, event_chat in self._rows(_SESSION_CHATS, ()):
            chat = snapshot_chat if snapshot_chat is not None else event_chat
            try:
                chats[str(sid)] = None if chat is None else int(chat)
            except ValueError:
                chats[str(sid)] = None
        return chats

    def recorded_message_ids(self) -> set[str]:
        return {str(found) for (found,) in self._rows(_RECORDED, ())}

    def attachment_bytes(self) -> int:
        """The blobs' bytes (``octet_length``: as stored, whatever TOAST makes of them)."""
        rows = self._rows("SELECT coalesce(sum(octet_length(content)), 0) FROM attachments", ())
        return int(rows[0][0])

    def db_bytes(self) -> int:
        return int(self._rows(_DB_BYTES, (self.schema,))[0][0])

    def inbound_claims(self, gateway: str) -> dict[str, tuple[str, bool]]:
        rows = self._rows(
            "SELECT message_id, node, done FROM inbound_claims WHERE gateway = %s", (gateway,)
        )
        return {str(mid): (str(node), bool(done)) for mid, node, done in rows}


def _run(text: str) -> Run:
    """A stored run (always a JSON object: ``PostgresRunLog.append`` writes mappings)."""
    value = json.loads(text)
    return value if isinstance(value, dict) else {}
