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
waits a lease, is left to the owner (the claim let go for its own copy) and watched a while
(``until_owner_takes``: an owner that dies before taking its copy leaves it to this node),
then dropped with a note: the owner never had it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from duragent.errors import DuragentError
from duragent.frontkit.inbound import ButtonPress, InboundMessage
from duragent.store import LeaseHeldError
from duragent.store.cluster import Cluster
from duragent.store.cluster_protocols import ClaimOutcome

__all__ = [
    "DEFER_SECONDS",
    "EXTRA_SECONDS",
    "InboundBusyError",
    "LeftToOwnerError",
    "defer_to_owner",
    "serve_at_owner",
    "serve_when_free",
    "until_owner_takes",
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
WATCH_SECONDS = 0.5
"""How often a node that left a message to its owner looks whether the owner took it."""


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
    for it, so this raises ``LeftToOwnerError`` (``until_owner_takes`` then watches), not the
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
        raise LeftToOwnerError(
            f"{value.chat.target} {what} is node {exc.owner}'s to take: it keeps the chat's "
            "session",
            handle,
        ) from exc


class LeftToOwnerError(InboundBusyError):
    """A live node keeps the chat's session: its own copy is its to take (``handle``: ours)."""

    def __init__(self, message: str, handle: Callable[[], Awaitable[None]]) -> None:
        super().__init__(message)
        self.handle = handle


async def until_owner_takes(
    claim: Callable[[], Awaitable[ClaimOutcome]],
    release: Callable[[], Awaitable[None]],
    handle: Callable[[], Awaitable[None]],
    window: float,
) -> bool:
    """After letting go of a message left to its session's owner: watch until it is taken.

    The owner may die before it takes its copy (the month of strangers lost a Discord DM so,
    and with it the chat's next messages): then nobody else has the message. So this node
    claims again now and then: a duplicate means the owner took it (False); a claim of its
    own is tried once (the owner's lease may have run out: the session is taken over here,
    True, the claim still held) and let go again while the lease lives. Raises
    ``InboundBusyError`` when neither happened within ``window`` (an owner alive without
    the platform's connection: the documented window).
    """
    deadline = time.monotonic() + window
    while time.monotonic() < deadline:
        await asyncio.sleep(WATCH_SECONDS)  # the owner's turn to claim its copy first
        outcome = await claim()
        if outcome == "duplicate":
            return False
        if outcome == "busy":
            continue
        try:
            await handle()
        except LeaseHeldError:
            await release()
            continue
        except BaseException:
            with contextlib.suppress(Exception):
                await release()
            raise
        return True
    raise InboundBusyError(f"left to the session's owner, which did not take it in {window:.0f} s")
