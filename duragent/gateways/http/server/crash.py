"""The last line of defence: an exception no handler claimed becomes a clean 500.

Starlette hands an ``Exception`` handler to its outermost middleware, which sends the
handler's response and then *re-raises*; uvicorn then closes the connection. The client got a
complete 500 without ``Connection: close``, so it reuses the connection and its next request
fails with a reset. This middleware sits inside that one and swallows the exception instead:

- nothing sent yet → a problem+json 500 with ``Connection: close`` (the request body may be
  half read, so the connection is not reused; the client knows it before its next request);
- response complete → nothing to do, the connection stays usable;
- response half sent → re-raised: uvicorn closes the connection, which is the only way to
  tell the client the response is cut (its framing says more was coming).

Exceptions with a registered handler (``exception_handlers`` by class) never reach this
middleware: starlette's inner exception middleware answers them first.
"""

from __future__ import annotations

import logging

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from duragent.gateways.http.server.problem import problem

__all__ = ["CrashGuard"]

log = logging.getLogger(__name__)


class CrashGuard:
    """ASGI middleware turning an unclaimed exception into a 500 the client can act on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the app; on an unclaimed exception answer 500 (see the module docstring)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = complete = False

        async def tracked(message: Message) -> None:
            nonlocal started, complete
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                complete = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except ClientDisconnect:
            log.debug("client left during %s %s", scope["method"], scope["path"])
        except Exception:
            if started and not complete:
                raise
            log.exception("unhandled error on %s %s", scope["method"], scope["path"])
            if not started:
                response = problem(
                    500, "internal error (logged on the server)", instance=scope["path"]
                )
                response.headers["connection"] = "close"
                await response(scope, receive, send)
