"""Versioned schema: numbered SQL files applied in order, recorded in ``schema_version``.

``migrations/NNNN_name.sql`` are applied once each, every one in its own transaction with the
version row it adds, under a transaction-level advisory lock so that several nodes starting at
once apply each migration exactly once. A database whose schema is *newer* than the newest
file this code knows is refused with both versions named: an older duragent must never write
to tables it does not understand (upgrade duragent, or point it at another schema).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

from psycopg import sql

from duragent.errors import DuragentError
from duragent.store.postgres.connection import Database

__all__ = ["Migration", "SchemaTooNewError", "current_version", "known_migrations", "migrate"]

_FILE = re.compile(r"(\d{4})_([a-z0-9_]+)\.sql\Z")
_LOCK_KEY = 0x6475_7261  # "dura": the advisory lock migrations take


class SchemaTooNewError(DuragentError):
    """The database was migrated by a newer duragent than this one."""

    def __init__(self, where: str, found: int, known: int) -> None:
        self.found = found
        self.known = known
        super().__init__(
            f"the database schema at {where} is version {found}, but this duragent knows "
            f"versions up to {known}: upgrade duragent (or use another store.schema); it will "
            "not write to tables it does not understand"
        )


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered SQL file."""

    version: int
    name: str
    sql: str


def known_migrations() -> list[Migration]:
    """Every migration shipped in the package, in order (numbers must run 1, 2, 3, …)."""
    found = []
    for entry in resources.files("duragent.store.postgres").joinpath("migrations").iterdir():
        match = _FILE.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migrations are not numbered 1..n: {[m.version for m in found]}")
    return found


_CREATE_VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS schema_version (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)"""


def current_version(db: Database) -> int:
    """The newest version applied to ``db``'s schema (0: none, or no schema yet)."""
    with db.transaction("reading the schema version") as conn:
        row = conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL",
            (f"{db.schema}.schema_version",),  # a plain identifier: checked by Database
        ).fetchone()
        if not row or not row[0]:
            return 0
        got = conn.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
    return int(got[0]) if got else 0


def migrate(db: Database) -> list[Migration]:
    """Bring ``db``'s schema up to date; returns the migrations applied now (maybe none).

    Raises ``SchemaTooNewError`` when the schema is newer than the code.
    """
    migrations = known_migrations()
    known = migrations[-1].version
    applied: list[Migration] = []
    with db.transaction("preparing the schema") as conn:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(db.schema)))
    for migration in migrations:
        with db.transaction(f"applying schema migration {migration.version}") as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            conn.execute(_CREATE_VERSION_TABLE)
            row = conn.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
            found = int(row[0]) if row else 0
            if found > known:
                raise SchemaTooNewError(db.where + f" (schema {db.schema})", found, known)
            if found >= migration.version:
                continue
            conn.execute(migration.sql.encode())  # several statements: the simple protocol
            conn.execute(
                "INSERT INTO schema_version (version, name) VALUES (%s, %s)",
                (migration.version, migration.name),
            )
            applied.append(migration)
    return applied
