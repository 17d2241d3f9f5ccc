"""Webhook paths: where a chat platform POSTs its updates to this server.

A chat gateway in webhook mode (Telegram's ``webhook_url``) names a path and a handler; the
HTTP front end only serves it: it reads the body (at most ``MAX_WEBHOOK_BODY`` bytes: an
update is a few kilobytes) and answers the status the handler returns, with an empty body.
The platform authenticates itself with its own secret (checked by the handler), not with
``server.api_token``, and addresses the server by its public name through a proxy, so these
paths are exempt from the loopback Host check (``BrowserGuard``'s public paths).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from duragent.frontkit import WebhookReceiver

__all__ = ["MAX_WEBHOOK_BODY", "webhook_routes"]

MAX_WEBHOOK_BODY = 1 << 20


def webhook_routes(webhooks: Mapping[str, WebhookReceiver]) -> list[Route]:
    """A ``POST`` route for each webhook path."""
    return [Route(path, _endpoint(handler), methods=["POST"]) for path, handler in webhooks.items()]


def _endpoint(handler: WebhookReceiver) -> Callable[[Request], Awaitable[Response]]:
    async def receive(request: Request) -> Response:
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > MAX_WEBHOOK_BODY:
            return Response(status_code=413)
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_WEBHOOK_BODY:
                return Response(status_code=413)
        status = await handler(body, {k.lower(): v for k, v in request.headers.items()})
        return Response(status_code=status)

    return receive
