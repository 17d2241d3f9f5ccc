"""Accepting connections: never more open than the connection share; the rest wait in the queue.

Every accepted socket is a file descriptor. The open-file budget (``session/descriptors.py``)
gives HTTP a share of the limit, but asyncio accepts whatever arrives: with far more clients
than that share, sockets alone used up the limit (measured: 250 clients at ``ulimit -n 256``,
hundreds of "Too many open files", failed requests). So the server runs its own accept loop
instead of asyncio's ``create_server``:

- **A cap.** While ``cap`` connections are open, nothing is accepted: new connections wait in
  the kernel's listen queue (``listen(2048)``; the client's connect has already succeeded, its
  request waits in the socket buffer) and are accepted, oldest first, as connections close.
  No request is refused and no socket is reset for lack of room.
- **Making room.** Connections that are not in a request count too (a keep-alive connection
  between requests, or one that has sent nothing yet). When the cap is reached and someone
  waits, the connection quiet the longest is closed, as nginx reuses its idle keep-alive
  connections, but only once it has been quiet ``QUIET_BEFORE_CLOSE`` seconds: closing one a
  client is about to reuse would fail that client's request, and a second of silence makes
  that unlikely. So a waiting connection waits for at most one request in flight to end, or
  for a quiet one to reach its second, or for a head or body timeout (``protocol.py``).
- **Out of descriptors anyway** (tools, sessions, another process): ``accept`` fails with
  EMFILE; the loop backs off ``ACCEPT_RETRY_SECONDS`` (connections wait in the queue), logs one
  line per failure (collapsed by the logging setup's ``RepeatFilter``) and tells
  :class:`ServerHealth` so ``/readyz`` says not ready. asyncio's own loop logged a traceback
  per queued connection per retry (262,996 tracebacks in 20 s).

A health probe waits in the queue like any client: a connection's purpose is unknown until its
request is read, so a "reserved" slot would go to whoever is next in the queue, not to the
probe. Its wait is bounded as above; ``/readyz`` then says whether connections are waiting.

The connections report their state through :class:`ConnectionHooks` (implemented by
:class:`Acceptor`, called by ``protocol.TimedH11Protocol``).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
import time
from collections.abc import Callable
from typing import Protocol

from duragent.gateways.http.server.health import ServerHealth

__all__ = [
    "ACCEPT_RETRY_SECONDS",
    "QUIET_BEFORE_CLOSE",
    "Acceptor",
    "ConnectionHooks",
    "QuietConnection",
]

log = logging.getLogger(__name__)

_OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
ACCEPT_RETRY_SECONDS = 0.5
"""After ``accept`` failed for lack of resources; the queue keeps the connections meanwhile."""
QUIET_BEFORE_CLOSE = 1.0
"""A connection quiet this long may be closed to make room for one that waits."""
_BATCH = 128
"""At most this many accepts per wake-up, so a burst does not hold up the event loop."""


class QuietConnection(Protocol):
    """A connection the acceptor may close when it is not in a request."""

    def close_if_quiet(self) -> bool:
        """Close the connection if it is between requests; whether it did."""


class ConnectionHooks(Protocol):
    """What a connection tells the acceptor about itself (called on the event loop)."""

    def made(self, conn: QuietConnection) -> None:
        """The connection is set up (it was counted when accepted)."""

    def quiet(self, conn: QuietConnection) -> None:
        """The connection is between requests (or has sent nothing yet)."""

    def busy(self, conn: QuietConnection) -> None:
        """A request started arriving on the connection."""

    def closed(self, conn: QuietConnection) -> None:
        """The connection is gone; its descriptor is free."""


class Acceptor:
    """The accept loop of one listening socket (see the module docstring)."""

    def __init__(
        self,
        sock: socket.socket,
        protocol_factory: Callable[[], asyncio.BaseProtocol],
        *,
        cap: int | None,
        health: ServerHealth | None = None,
    ) -> None:
        self._sock = sock
        self._factory = protocol_factory
        self.cap = cap
        self.health = health
        self._pending = 0
        """Accepted, protocol not yet made."""
        self._live: set[QuietConnection] = set()
        self._quiet: dict[QuietConnection, float] = {}
        """Connections between requests → since when; insertion order is quiet-since order."""
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.clock: Callable[[], float] = time.monotonic

    @property
    def open(self) -> int:
        """Connections accepted and not yet closed."""
        return self._pending + len(self._live)

    def start(self) -> None:
        """Start accepting (on the running loop)."""
        self._sock.setblocking(False)
        self._task = asyncio.create_task(self._run(), name="http-accept")

    async def stop(self) -> None:
        """Stop accepting; queued connections stay queued until the socket is closed."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    # --- ConnectionHooks --------------------------------------------------------------

    def made(self, conn: QuietConnection) -> None:
        """See :class:`ConnectionHooks`."""
        self._live.add(conn)

    def quiet(self, conn: QuietConnection) -> None:
        """See :class:`ConnectionHooks`."""
        self._quiet.pop(conn, None)
        self._quiet[conn] = self.clock()
        self._changed.set()

    def busy(self, conn: QuietConnection) -> None:
        """See :class:`ConnectionHooks`."""
        self._quiet.pop(conn, None)

    def closed(self, conn: QuietConnection) -> None:
        """See :class:`ConnectionHooks`."""
        self._quiet.pop(conn, None)
        self._live.discard(conn)
        self._changed.set()

    # --- the loop ---------------------------------------------------------------------

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._readable(loop)
            if self.cap is not None and self.open >= self.cap:
                await self._make_room()
                continue
            failure = self._accept_some(loop)
            if failure is not None:
                await asyncio.sleep(ACCEPT_RETRY_SECONDS)

    async def _readable(self, loop: asyncio.AbstractEventLoop) -> None:
        """Wait until a connection is in the queue."""
        ready = loop.create_future()
        fd = self._sock.fileno()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_reader(fd, wake)
        try:
            await ready
        finally:
            loop.remove_reader(fd)

    async def _make_room(self) -> None:
        """At the cap with a connection waiting: close the longest-quiet one, or wait."""
        if self.health is not None and self.cap is not None:
            self.health.connections_full(self.cap)
        self._changed.clear()
        delay: float | None = None
        for conn, since in list(self._quiet.items()):
            age = self.clock() - since
            if age < QUIET_BEFORE_CLOSE:
                delay = QUIET_BEFORE_CLOSE - age
                break
            del self._quiet[conn]
            if conn.close_if_quiet():
                log.debug("closed a connection quiet for %.1fs: another one waits", age)
                break
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), delay)

    def _accept_some(self, loop: asyncio.AbstractEventLoop) -> OSError | None:
        """Accept what is queued, up to the cap; the error if accepting failed."""
        for _ in range(_BATCH):
            if self.cap is not None and self.open >= self.cap:
                return None
            try:
                conn, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return None
            except ConnectionAbortedError:
                continue
            except OSError as exc:
                if exc.errno in _OUT_OF_RESOURCES:
                    if self.health is not None:
                        self.health.accept_failed(exc)
                    log.warning(
                        "cannot accept connections: %s; they wait in the queue, retrying every %gs",
                        exc.strerror or exc,
                        ACCEPT_RETRY_SECONDS,
                    )
                else:
                    log.exception("accepting a connection failed; retrying")
                return exc
            self._pending += 1
            loop.create_task(self._connect(loop, conn))
        return None

    async def _connect(self, loop: asyncio.AbstractEventLoop, conn: socket.socket) -> None:
        try:
            await loop.connect_accepted_socket(self._factory, conn)
        except Exception as exc:  # the peer may have gone already
            log.debug("accepted connection not set up: %s", exc)
            conn.close()
        finally:
            self._pending -= 1
            self._changed.set()
