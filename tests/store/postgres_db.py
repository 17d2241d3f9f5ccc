"""A throw-away schema of the test PostgreSQL for each test that needs one.

The address comes from ``DURAGENT_TEST_POSTGRES_DSN`` (default: the local server, trust
auth, database ``test``). Every test gets a fresh schema with a random name, dropped after
it, so tests never see each other's rows and leave nothing behind. When no server answers,
the test is skipped with the reason, unless ``DURAGENT_REQUIRE_POSTGRES`` is set (then it
fails: on machines that have the server, a silent skip would hide a broken setup).
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import secrets
import socket
import threading
import time
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


class Outage:
    """A TCP relay in front of the test database that can be cut and restored.

    What a database restart or a network partition looks like to duragent: connections are
    reset and new ones refused while ``down()``, and accepted again after ``up()``. The socket
    is the OS boundary; the database behind it is the real one.
    """

    def __init__(self) -> None:
        parts = psycopg.conninfo.conninfo_to_dict(DSN)
        self._target = (str(parts.get("host") or "127.0.0.1"), int(parts.get("port") or 5432))
        self._lock = threading.Lock()
        self._links: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self._lose_commit = False
        self.commits_lost = 0
        self.port = 0
        self.up()
        parts.update(host="127.0.0.1", port=str(self.port))
        self.dsn = psycopg.conninfo.make_conninfo(**parts)

    def up(self) -> None:
        """Accept connections (again, on the same port).

        The port is drawn below the kernel's ephemeral range: a port the relay let go of
        while down could otherwise be taken meanwhile as the source port of any outgoing
        connection on the machine (another test's), and binding it again failed with
        "Address already in use" (seen under load with two workers).
        """
        listener = _bound(self.port)
        listener.listen(16)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        """Refuse new connections and reset every open one."""
        if self._listener is not None:
            with contextlib.suppress(OSError):  # wakes accept() (close alone does not)
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        with self._lock:
            links, self._links = self._links, []
        for link in links:
            with contextlib.suppress(OSError):
                link.shutdown(socket.SHUT_RDWR)
            link.close()

    def lose_next_commit_answer(self) -> None:
        """Pass the next ``COMMIT`` to the server, then drop its answer and go ``down()``.

        The client cannot know whether its transaction committed (it did): what a network
        failure at the worst moment looks like.
        """
        self._lose_commit = True

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(self._target)
            with self._lock:
                self._links += [client, server]
            committed = threading.Event()  # this link passed the COMMIT whose answer is lost
            threading.Thread(target=self._up, args=(client, server, committed), daemon=True).start()
            threading.Thread(
                target=self._back, args=(server, client, committed), daemon=True
            ).start()

    def _up(self, source: socket.socket, sink: socket.socket, committed: threading.Event) -> None:
        """Client to server; notes the COMMIT to lose (a simple-query message ``Q…COMMIT``)."""
        try:
            while data := source.recv(65536):
                if self._lose_commit and b"COMMIT\x00" in data:
                    self._lose_commit = False
                    committed.set()
                sink.sendall(data)
        except OSError:
            pass
        finally:
            _close(source, sink)

    def _back(self, source: socket.socket, sink: socket.socket, committed: threading.Event) -> None:
        """Server to client; the answer to the lost COMMIT is dropped and the relay cut."""
        try:
            while data := source.recv(65536):
                if committed.is_set():
                    self.commits_lost += 1
                    self.down()
                    return
                sink.sendall(data)
        except OSError:
            pass
        finally:
            _close(source, sink)


RELAY_PORTS = range(20_000, 32_000)
"""Where relays listen: below the usual ephemeral range (32768-60999), so no outgoing
connection's source port can take a relay's port while it is down."""


def _bound(port: int) -> socket.socket:
    """A socket bound to ``port`` (0: a free one in ``RELAY_PORTS``), trying a while."""
    deadline = time.monotonic() + 10
    while True:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind(("127.0.0.1", port or random.choice(RELAY_PORTS)))
            return listener
        except OSError:
            listener.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05 if port else 0)


def _close(*ends: socket.socket) -> None:
    for end in ends:
        with contextlib.suppress(OSError):
            end.shutdown(socket.SHUT_RDWR)
