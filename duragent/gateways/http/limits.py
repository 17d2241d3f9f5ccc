"""``server.max_connections``: at most that many API requests are served at once.

Like the reference (a concurrency limit in front of the router), a request over the limit
waits for a slot rather than being refused, so a burst is smoothed instead of failed. A
stream holds its slot until it ends. Health checks (``/livez``, ``/readyz``) never wait: an
overloaded server must still say it is alive (and ``/readyz`` that it is busy: the slots in
use are counted in :class:`ServerHealth`).
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Receive, Scope, Send

from duragent.gateways.http.health import ServerHealth

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
        async with self._slots:
            self.health.busy += 1
            try:
                await self.app(scope, receive, send)
            finally:
                self.health.busy -= 1
