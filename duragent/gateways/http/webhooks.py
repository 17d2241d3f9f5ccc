"""Webhook paths: where a chat platform POSTs its updates to this server.

A chat gateway in webhook mode (Telegram's ``webhook_url``) names a path and a handler; the
HTTP front end only serves it: it reads the body (at most ``MAX_WEBHOOK_BODY`` bytes: an
update is a few kilobytes) and answers the status the handler returns, with an empty body.
The platform authenticates itself with its own secret (checked by the handler), not with
``server.api_token``, and addresses the server by its public name through a proxy, so these
paths are exempt from the loopback Host check (``BrowserGuard``'s public paths).

With several nodes (a shared store), the load balancer hands a chat's updates to any node,
but the chat's session lives on the node holding its lease. A receiver whose chat session
another node owns raises ``LeaseHeldError``; the update is then served like a session
request (``cluster.forwarding.SessionForwarding``): forwarded, signed, to the same path on the live
owner, whose answer (200 once recorded there) is Telegram's; taken over here when the owner
is gone (its lease expired or it left); served again after a fenced write. A signed hop is
handled on the receiving node and never forwarded again. So a chat is answered by one node,
in order, whichever node an update reaches.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from duragent.frontkit import WebhookReceiver
from duragent.gateways.http.cluster.forwarding import SessionForwarding

__all__ = ["MAX_WEBHOOK_BODY", "webhook_routes"]

MAX_WEBHOOK_BODY = 1 << 20


def webhook_routes(
    webhooks: Mapping[str, WebhookReceiver], forwarding: SessionForwarding | None = None
) -> list[Route]:
    """A ``POST`` route for each webhook path (served where the chat's session lives)."""
    return [
        Route(path, _endpoint(handler, forwarding), methods=["POST"])
        for path, handler in webhooks.items()
    ]


def _endpoint(
    handler: WebhookReceiver, forwarding: SessionForwarding | None
) -> Callable[[Request], Awaitable[Response]]:
    async def receive(request: Request) -> Response:
        if forwarding is None:
            return await here(request)
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > MAX_WEBHOOK_BODY:
            return Response(status_code=413)
        hop = await forwarding.verify(request)  # 403 for a forged hop
        return await forwarding.serve(request, here, hop=hop)

    async def here(request: Request) -> Response:
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
