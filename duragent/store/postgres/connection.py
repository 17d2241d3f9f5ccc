"""Connections to PostgreSQL: one sync pool per store, errors told as ``StorageError``.

The session actors run on their own threads and call the store synchronously (as they call
the file backend), so a synchronous ``psycopg_pool.ConnectionPool`` fits: a write borrows a
connection for one transaction and gives it back. Every connection gets the store's schema as
its ``search_path``, so the SQL names tables unqualified and one database can hold several
workspaces (or one schema per test run).

A database that cannot be reached, or drops a connection, is a condition of the machine like
a full disk: it is raised as ``StorageError`` (never as corruption), with the DSN described
*without* its password. Broken connections are checked on the way out of the pool and
replaced, so the store recovers by itself when the database comes back.

During an outage two things keep that quick (specs/202611241410.cluster-operations.md):
once the pool's attempts to connect fail, or a transaction failed for lack of the database,
a transaction waits at most ``OUTAGE_WAIT`` for a connection (a client gets its 503 in a
second, not after ``connect_timeout``); and the pool's reconnection attempts give up after
``RECONNECT_SECONDS`` (psycopg_pool doubles its delay without a cap, so after a long outage
the next attempt could come minutes after the database is back). The next request or
``/readyz`` probe then starts a fresh attempt at once.
"""

from __future__ import annotations

import errno
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import psycopg_pool
from psycopg import conninfo
from psycopg.rows import TupleRow

from duragent.errors import ConfigError, StorageError

__all__ = [
    "CONNECT_FIX",
    "DEFAULT_SCHEMA",
    "Database",
    "check_schema_name",
    "describe_dsn",
    "dsn_password",
]

DEFAULT_SCHEMA = "public"
OUTAGE_WAIT = 1.0
"""Seconds a transaction waits for a connection while the database is known to be away."""
CONNECT_FIX = (
    "check store.dsn in duragent.yaml, or the --dsn given (host, port, database, user, "
    "password), and that PostgreSQL runs there"
)
"""What to do when the first connection fails: ``serve``, ``store`` and ``doctor`` say it."""
RECONNECT_SECONDS = 3.0
"""How long the pool retries one connection (delays 1 s, 2 s) before the next demand retries."""
_SCHEMA = re.compile(r"[a-z_][a-z0-9_]{0,62}\Z")


def check_schema_name(schema: str) -> str:
    """``schema`` when it is a plain lower-case identifier (it goes into ``search_path``)."""
    if not _SCHEMA.match(schema):
        raise ConfigError(
            f"store.schema {schema!r} is not a plain schema name",
            field="store.schema",
            value=schema,
            fix="use lower-case letters, digits and _ (not starting with a digit), ≤ 63 chars",
        )
    return schema


def _parse(dsn: str) -> dict[str, str]:
    try:
        return {k: str(v) for k, v in conninfo.conninfo_to_dict(dsn).items()}
    except psycopg.ProgrammingError as exc:
        raise ConfigError(
            "store.dsn is not a PostgreSQL connection string",
            field="store.dsn",
            fix="write it as postgresql://user:password@host:5432/dbname "
            f"or 'host=… dbname=…' ({_first_line(exc)})",
        ) from None


def dsn_password(dsn: str) -> str | None:
    """The password inside ``dsn``, if any (to register with the log redactor)."""
    return _parse(dsn).get("password") or None


def describe_dsn(dsn: str) -> str:
    """``dsn`` for messages: host, port, database and user, never the password."""
    parts = _parse(dsn)
    host = parts.get("host") or parts.get("hostaddr") or "localhost"
    where = f"{host}:{parts.get('port') or 5432}/{parts.get('dbname') or parts.get('user') or ''}"
    user = parts.get("user")
    return f"postgresql://{user + '@' if user else ''}{where}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class Database:
    """A pool of connections to one schema of one database (see module docstring)."""

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        min_size: int = 1,
        max_size: int = 8,
        connect_timeout: float = 10.0,
    ) -> None:
        self.schema = check_schema_name(schema)
        self.connect_timeout = connect_timeout
        self.where = describe_dsn(dsn)
        """The DSN without its password: for every message."""
        self.failure: StorageError | None = None
        """The last connection-level failure, until a transaction succeeds (``/readyz``)."""
        self._lost = False
        """The last transaction or probe lost its connection or could not connect (not merely
        waited for a busy pool): the database itself is away."""
        self._ok_at = 0.0
        """When a transaction last committed (``time.monotonic``): the database answers."""
        self._dsn = dsn
        self._kwargs: dict[str, object] = {
            "options": f"-c search_path={self.schema}",
            "application_name": f"duragent:{self.schema}",  # pg_stat_activity tells who
            "connect_timeout": max(1, round(connect_timeout)),
        }
        self._pool = psycopg_pool.ConnectionPool(
            dsn,
            kwargs=self._kwargs,
            min_size=min_size,
            max_size=max_size,
            timeout=connect_timeout,
            check=psycopg_pool.ConnectionPool.check_connection,
            reconnect_timeout=RECONNECT_SECONDS,
            name=f"duragent:{self.schema}",
            open=False,
        )

    def open(self) -> None:
        """Open the pool and wait for its first connection (``StorageError`` when refused)."""
        try:
            # One direct attempt first: a refused or misconfigured connection fails at once
            # with the server's own words, instead of after the pool's retries time out.
            psycopg.connect(self._dsn, **self._kwargs).close()  # type: ignore[arg-type]
            self._pool.open(wait=True, timeout=self._pool.timeout)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            self._pool.close()
            # At start nothing has worked yet: the DSN is as likely at fault as the server.
            self.failure = self.error("connecting to the database", exc, fix=CONNECT_FIX)
            raise self.failure from None

    def close(self) -> None:
        """Close every connection."""
        self._pool.close()

    @contextmanager
    def transaction(self, operation: str) -> Iterator[psycopg.Connection[TupleRow]]:
        """A connection inside one transaction: committed on success, rolled back on error.

        Connection-level failures (the database down, a dropped connection, the pool empty
        for too long) leave as ``StorageError(operation)``; errors of the data (a duplicate
        key, a check) stay ``psycopg`` errors for the caller to translate.
        """
        try:
            conn = self._borrow()
            try:
                with conn.transaction():
                    yield conn
            finally:
                self._pool.putconn(conn)
        except (psycopg.OperationalError, psycopg.InterfaceError, psycopg_pool.PoolTimeout) as exc:
            if not isinstance(exc, psycopg_pool.PoolTimeout):  # a timeout: see _borrow
                self._lost = True
            self.failure = self.error(operation, exc)
            raise self.failure from exc
        self.failure = None
        self._lost = False
        self._ok_at = time.monotonic()

    def _borrow(self) -> psycopg.Connection[TupleRow]:
        """A connection from the pool; ``PoolTimeout`` at once when the database is away.

        A busy pool is waited for up to ``connect_timeout``; but when the pool's own attempts
        to connect fail meanwhile (its error count grows), or the last transaction lost its
        connection, the wait ends after ``OUTAGE_WAIT``: a client of a server whose database
        is down gets its 503 in about a second. A wait that merely timed out (a busy pool, a
        slow probe) is no evidence that the database is away and never shortens the next.
        """
        began = time.monotonic()
        deadline = began + self.connect_timeout
        errors = self._pool.get_stats().get("connections_errors", 0)
        while True:
            left = deadline - time.monotonic()
            try:
                return self._pool.getconn(timeout=max(0.01, min(OUTAGE_WAIT, left)))
            except psycopg_pool.PoolTimeout:
                if self._away(errors, began) or left <= OUTAGE_WAIT:
                    raise

    def _away(self, errors_before: int, since: float) -> bool:
        """Whether a wait for a connection that began at ``since`` says the database is away.

        Away: the pool's attempts to connect failed (its error count grew past
        ``errors_before``) or the last transaction lost its connection, *and* no transaction
        committed meanwhile. A pool that cannot grow (the server's ``max_connections``) but
        whose connections keep committing is busy, not away.
        """
        if self._pool.get_stats().get("connections_errors", 0) > errors_before:
            self._lost = True
        return self._lost and self._ok_at < since

    def ping(self, timeout: float = 1.0) -> None:
        """``SELECT 1``, waiting at most ``timeout`` for a connection; ``StorageError`` if not.

        Health probes must be quick: ``/readyz`` answers while the database is away. A pool
        whose every connection is busy for ``timeout`` is not a database failure (they are
        being answered): that is left alone, unless the pool's connection attempts failed
        meanwhile or the database was already lost.
        """
        began = time.monotonic()
        errors = self._pool.get_stats().get("connections_errors", 0)
        try:
            with self._pool.connection(timeout=timeout) as conn:
                conn.execute("SELECT 1")
        except psycopg_pool.PoolTimeout as exc:
            if not self._away(errors, began):
                return  # busy, not away: the next transaction waits its turn
            self.failure = self.error("checking the database", exc)
            raise self.failure from exc
        except psycopg.Error as exc:
            self._lost = True
            self.failure = self.error("checking the database", exc)
            raise self.failure from exc
        self.failure = None
        self._lost = False
        self._ok_at = time.monotonic()

    def error(self, operation: str, exc: BaseException, *, fix: str = "") -> StorageError:
        """``exc`` as a ``StorageError`` naming ``operation`` and the database (no password)."""
        told = f"{self.where}: {_first_line(exc)}" + (f". Fix: {fix}" if fix else "")
        cause = ConnectionError(errno.ECONNREFUSED, told)
        return StorageError(operation, cause)
