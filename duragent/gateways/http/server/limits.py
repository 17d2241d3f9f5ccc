"""``server.max_connections``: at most that many API requests are served at once.

Like the reference (a concurrency limit in front of the router), a request over the limit
waits for a slot rather than being refused, so a burst is smoothed instead of failed. A
stream holds its slot until it ends. Health checks (``/livez``, ``/readyz``) never wait: an
overloaded server must still say it is alive (and ``/readyz`` that it is busy: the slots in
use are counted in :class:`ServerHealth`).

A request's body (up to its path's limit: 2 MiB, more for a message with attachments) is
read *before* its slot is taken: a client that uploads slowly, or trickles a byte now and
then, waits outside the limit (cut off by ``server.body_timeout_seconds``) instead of keeping
others out.
"""

from __future__ import annotations

import asyncio
from collections import deque

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from duragent.gateways.http.server.browser import has_body
from duragent.gateways.http.server.health import ServerHealth
from duragent.gateways.http.server.media_limits import body_limit

__all__ = ["ConcurrencyLimit"]

EXEMPT_PATHS = frozenset({"/livez", "/readyz"})


class ConcurrencyLimit:
    """ASGI middleware: at most ``limit`` HTTP requests inside ``app`` at once."""

    def __init__(self, app: ASGIApp, limit: int, health: ServerHealth | None = None) -> None:
        self.app = app
        self.limit = limit
        self._slots = asyncio.Semaphore(limit)
        self.health = health or ServerHealth(limit)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve ``scope`` once a slot is free (health checks and non-HTTP scopes at once)."""
        if scope["type"] != "http" or scope.get("path") in EXEMPT_PATHS:
            await self.app(scope, receive, send)
            return
        if has_body(Headers(scope=scope)):
            receive = await _read_body_first(receive, body_limit(scope))
        async with self._slots:
            self.health.busy += 1
            try:
                await self.app(scope, receive, send)
            finally:
                self.health.busy -= 1


async def _read_body_first(receive: Receive, limit: int) -> Receive:
    """Receive the body now (stopping past ``limit`` bytes); replay it to the app later.

    Past the limit the rest is left to the app, which answers 413 as it reads on. A
    disconnect is replayed too, so the app sees the client gone.
    """
    received: deque[Message] = deque()
    size = 0
    while True:
        message = await receive()
        received.append(message)
        size += len(message.get("body", b""))
        if message["type"] != "http.request" or not message.get("more_body"):
            break
        if size > limit:
            break

    async def replay() -> Message:
        return received.popleft() if received else await receive()

    return replay
