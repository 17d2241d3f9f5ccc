"""A throw-away schema of the test PostgreSQL for each test that needs one.

The address comes from ``DURAGENT_TEST_POSTGRES_DSN`` (default: the local server, trust
auth, database ``test``). Every test gets a fresh schema with a random name, dropped after
it, so tests never see each other's rows and leave nothing behind. When no server answers,
the test is skipped with the reason, unless ``DURAGENT_REQUIRE_POSTGRES`` is set (then it
fails: on machines that have the server, a silent skip would hide a broken setup).
"""

from __future__ import annotations

import functools
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

psycopg = pytest.importorskip("psycopg", reason="the postgres extra is not installed")

from psycopg import sql  # noqa: E402

from duragent.store.postgres import Database  # noqa: E402

DSN = os.environ.get(
    "DURAGENT_TEST_POSTGRES_DSN", "host=127.0.0.1 port=5432 dbname=test user=postgres"
)


@functools.cache
def unreachable() -> str | None:
    """Why the test database cannot be used, or None when it can."""
    try:
        with psycopg.connect(DSN, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return f"no PostgreSQL at DURAGENT_TEST_POSTGRES_DSN ({DSN}): {exc}".strip()
    return None


def require_postgres() -> None:
    """Skip (or fail, when it is required) the calling test without a database."""
    reason = unreachable()
    if reason is None:
        return
    if os.environ.get("DURAGENT_REQUIRE_POSTGRES"):
        pytest.fail(reason)
    pytest.skip(reason)


def drop_schema(schema: str) -> None:
    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@contextmanager
def fresh_schema() -> Iterator[str]:
    """A new schema name (created by the first migration), dropped afterwards."""
    require_postgres()
    schema = f"t_{secrets.token_hex(6)}"
    try:
        yield schema
    finally:
        drop_schema(schema)


@contextmanager
def database(schema: str) -> Iterator[Database]:
    """An unopened ``Database`` on ``schema``, closed afterwards."""
    db = Database(DSN, schema=schema, max_size=4, connect_timeout=5)
    try:
        yield db
    finally:
        db.close()
