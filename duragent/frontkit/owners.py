"""A chat's message taken by the node that owns its session, on platforms that fan out.

Discord sends every event to every connected node (``specs/202611240900.postgres-store.md``),
and the inbound ledger lets the first node to claim a message handle it. That node need not
be the one whose actor holds the chat's session lease: it then met ``LeaseHeldError`` and the
message was lost (the owner, meanwhile, found it being claimed). So on such a platform a node
that finds another node serving the chat (a live lease on one of its sessions) *defers*: it
waits ``DEFER_SECONDS`` before claiming, so the owner's own copy of the message is claimed
first, and its late claim then finds a duplicate and does nothing.

Nothing is lost when the owner dies: the deferring node still claims after its wait. If the
owner took the message, that is a duplicate; if it did not (it died, or its connection was
down), the claim is ``first`` and this node handles it, waiting out the dead owner's lease
(``serve_when_free``: at most a lease and ``EXTRA_SECONDS``) and taking the session over.
The window left: an owner that claimed the message and died before recording it holds the
claim for its hold time (two leases) and nobody delivers it again (Discord does not
redeliver); and an owner alive but without a connection keeps its lease, so the message
waits a lease and is then left to the owner (``GatewayChats``: logged, the claim let go for
the owner's own copy; lost only if the owner never had one).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from duragent.errors import DuragentError
from duragent.frontkit.inbound import ButtonPress, InboundMessage
from duragent.store import LeaseHeldError
from duragent.store.cluster import Cluster

__all__ = [
    "DEFER_SECONDS",
    "EXTRA_SECONDS",
    "InboundBusyError",
    "defer_to_owner",
    "serve_at_owner",
    "serve_when_free",
]

log = logging.getLogger(__name__)


class InboundBusyError(DuragentError):
    """Another node is recording this very message now: the platform should retry later.

    A webhook answers 500 (Telegram sends the update again), polling asks for it again; by
    then the other node has recorded it (a duplicate) or died (its claim is taken over).
    """


DEFER_SECONDS = 0.25
"""How long a node not serving a chat lets the owner claim the chat's message first."""
EXTRA_SECONDS = 2.0
"""How long past a lease a message waits for its session's owner to let go."""
POLL_SECONDS = 0.5


async def defer_to_owner(cluster: Cluster, gateway: str, chat_id: str) -> bool:
    """Wait for the owner to claim first when another live node serves the chat; whether so."""
    chats = cluster.orphans
    if chats is None:  # one node: nobody to defer to
        return False
    owner = await asyncio.to_thread(chats.serving_node, gateway, chat_id)
    if owner is None or owner == cluster.leaders.node_id:
        return False
    await asyncio.sleep(DEFER_SECONDS)
    return True


async def serve_when_free(handle: Callable[[], Awaitable[None]], lease_seconds: float) -> None:
    """``handle()``, again while another node's lease on the session runs out (see above)."""
    deadline = time.monotonic() + lease_seconds + EXTRA_SECONDS
    while True:
        try:
            await handle()
            return
        except LeaseHeldError as exc:
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            log.info("%s; taking it over in at most %.2f s", exc, min(exc.expires_in, left))
            await asyncio.sleep(min(exc.expires_in + 0.05, POLL_SECONDS, left))


async def serve_at_owner(
    value: InboundMessage | ButtonPress, handle: Callable[[], Awaitable[None]], lease: float
) -> None:
    """``serve_when_free``; a session its owner keeps alive past the wait is left to it.

    The owner has its own copy of ``value`` (the platform fans out): the claim must be let go
    for it, so this raises ``InboundBusyError`` (a refusal the gateway logs quietly), not the
    ``LeaseHeldError`` that would read as a message lost.
    """
    try:
        await serve_when_free(handle, lease)
    except LeaseHeldError as exc:
        what = (
            f"message {value.message_id}"
            if isinstance(value, InboundMessage)
            else f"button press {value.callback_id}"
        )
        log.info("%s %s is left to node %s (%s)", value.chat.target, what, exc.owner, exc)
        raise InboundBusyError(
            f"{value.chat.target} {what} is node {exc.owner}'s to take: it keeps the chat's session"
        ) from exc
