"""The path other nodes hand chat messages to: ``POST /api/v1/cluster/chat-messages``.

A chat message that reached a node whose chat session another node owns (Telegram long
polling runs on one node; a load-balanced external gateway hands each message to one) is
handed to the owner as a signed hop (``cluster.relay``). This route is its receiving end:
it serves nothing but signed hops (403 for anything else, whatever ``api_token`` says, and
403 for a forged one; 503 for one older than a lease, which its sender has given up on),
and answers what the relay's ``OwnerRelay.receive`` decided: 200 once the message is recorded
here, 503 with ``x-duragent-moved`` when this node does not own the session either.

Exempt from the loopback Host check (like a webhook): nodes address each other by the
names they advertise, and the signature, not the address, is what authenticates them.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from duragent.cluster import RELAY_PATH, OwnerRelay
from duragent.gateways.http.cluster.forwarding import SessionForwarding
from duragent.gateways.http.server.problem import ProblemError

__all__ = ["RELAY_PATH", "relay_route"]


def relay_route(relay: OwnerRelay, forwarding: SessionForwarding) -> Route:
    """The ``POST`` route taking chat messages other nodes hand to this one."""

    async def receive(request: Request) -> Response:
        if not await forwarding.verify(request):  # reads the body (413 past the limit)
            raise ProblemError(403, "only the nodes of this deployment hand over chat messages")
        status, headers = await relay.receive(await request.body())
        return Response(status_code=status, headers=headers)

    return Route(RELAY_PATH, receive, methods=["POST"])
