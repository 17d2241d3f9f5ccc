"""A payload handed to the node that owns its session: the cluster's relay.

With several nodes on one database, a chat's session lives on the node whose actor holds its
lease. Some platforms hand a message to a node that is not that one and never to the owner:

- Telegram **long polling** runs on one node (the polling leader), but the chat's session may
  be owned by another: the user also talked to it over HTTP there, a schedule ran there, or
  the bot just switched from webhook to polling;
- an **external gateway** whose platform delivers each message to one node (load-balanced,
  ``fans_out: false``).

Before, the node met ``LeaseHeldError`` until the owner's actor went idle (minutes): polling
asked Telegram for the update again and again and skipped it after five attempts (lost); a
plugin's message failed. Now ``OwnerRelay.serve`` runs the handling here and, when it meets
another node's lease:

- **live owner** (registered, heartbeat fresh): the payload (the message, encoded by its
  sender: ``frontkit.relayed``) is POSTed to the owner's ``RELAY_PATH`` as a signed hop
  (``cluster/hops.py``: the same scheme as the HTTP forwarding, no second one). The owner
  hands it to its ``Receiver`` (the chat gateways' pipeline, ``GatewayChats.front``), so its
  own in-order queue records and answers it, and replies through its own connection to the
  platform. Its 200 means "recorded" (or deliberately dropped); only then does ``serve``
  return, and only then does polling confirm the update's offset.
- **owner moved on** (it answers 503 with ``x-duragent-moved``, or this node's write was
  fenced): looked up again, up to ``MAX_ATTEMPTS`` times.
- **owner gone** (not registered, heartbeat stale, unreachable, or stalling while the hop
  waits): not waited on beyond its lease: ``serve`` retries the handling here until the
  lease expires (at most a lease and ``EXTRA_SECONDS``), and this node takes the session
  over (its actor replays it from the database).
- **nobody took it** (the owner answered an error, or the lease never ran out):
  ``RelayFailedError`` or ``LeaseHeldError`` reaches the adapter, which does not confirm the
  message (polling asks Telegram for it again, never skipping it for this reason).

The relay knows leases, nodes and hops, not what it carries: the payload is bytes its
sender encoded and its receiver decodes (``frontkit.relayed`` for chat messages,
``scheduler.relayed`` for a schedule's due time run where its chat's session lives), so the
cluster layer needs none of the chat kit's types. Each receiver refuses (``ValueError``) a
body that is not its kind; the first one that takes it records it.

Exactly once: the sending node keeps its claim on the message in the inbound ledger while
the owner records it, and settles it once the owner answered 200; the owner therefore
records without claiming (``receive``). A message sent twice anyway (the hop's answer lost
after the owner recorded it) is recognised by its platform id in the session
(``TurnRunner.accept``) and not answered twice.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import NamedTuple, Protocol

from duragent.cluster.hops import MOVED, Hops
from duragent.errors import DuragentError, StorageError
from duragent.observability.metrics import Metrics
from duragent.store import FencedWriteError, LeaseHeldError, NodeDirectory, NodeRecord

__all__ = [
    "EXTRA_SECONDS",
    "RELAY_PATH",
    "OwnerRelay",
    "Receiver",
    "RelayFailedError",
    "Unpacked",
]

log = logging.getLogger(__name__)

RELAY_PATH = "/api/v1/cluster/chat-messages"
"""Where a node takes a payload another node hands over (signed hops only): chat messages."""
MAX_ATTEMPTS = 6
"""Times the owner is looked up again (it moved on, or this node's write was fenced)."""
EXTRA_SECONDS = 2.0
"""How long past a gone owner's lease a message waits before it is given back unhandled."""
POLL_SECONDS = 0.5
"""While a gone owner's lease runs out, the session is claimed again this often."""


class RelayFailedError(DuragentError):
    """The chat's owner did not take the message: it is recorded nowhere, deliver it again."""


class Unpacked(NamedTuple):
    """A payload handed to this node, decoded by its ``Receiver``."""

    label: str
    """What it is, for the log (a chat message's chat)."""
    record: Callable[[], Awaitable[None]]
    """Record it here: returns once it is on disk or deliberately dropped."""


class Receiver(Protocol):
    """What takes the payloads other nodes hand to this one (the chat gateways' pipelines)."""

    def unpack(self, body: bytes) -> Unpacked | None:
        """``body`` decoded, with how to record it here, without the inbound ledger.

        None: nothing on this node takes it now (its gateway did not start here), so its
        sender hands it again later; ``ValueError``: ``body`` encodes no payload.
        """
        ...


def _fenced(exc: BaseException) -> bool:
    """This node lost the session while handling (before or after recording anything)."""
    return isinstance(exc, FencedWriteError) or (
        isinstance(exc, StorageError) and isinstance(exc.__cause__, FencedWriteError)
    )


class OwnerRelay:
    """Hands payloads (chat messages) to their session's owner, takes those handed here."""

    def __init__(self, nodes: NodeDirectory, lease_seconds: float) -> None:
        self.hops = Hops(nodes, lease_seconds)
        self._receivers: list[Receiver] = []
        self.relayed = 0
        """Messages handed to their owner since start."""
        self.taken_over = 0
        """Messages served here after their session's owner went away."""
        self.received = 0
        """Messages other nodes handed to this one since start."""

    def instrument(self, metrics: Metrics) -> None:
        """Export the counters at scrape time (``duragent_chat_relay``)."""
        metrics.sample(
            "duragent_chat_relay",
            "Since start: chat messages handed to the node owning their session, taken here "
            "from other nodes, and served here after their session's owner went away.",
            lambda: [
                (("relayed",), float(self.relayed)),
                (("received",), float(self.received)),
                (("taken_over",), float(self.taken_over)),
            ],
            labels=("outcome",),
        )

    def listen(self, receiver: Receiver) -> None:
        """Take the payloads of ``receiver``'s kind other nodes hand here (``receive``)."""
        self._receivers.append(receiver)

    async def aclose(self) -> None:
        """Close the connections to other nodes."""
        await self.hops.aclose()

    # --- the node a message reached --------------------------------------------------------

    async def serve(self, label: str, body: bytes, handle: Callable[[], Awaitable[None]]) -> None:
        """``handle()`` here, at the live owner of the session, or here after it left.

        ``body``: what ``handle`` handles, encoded (JSON) for the owner's ``Receiver``;
        ``label``: what it is, for the log (a chat message's chat).
        """
        deadline: float | None = None
        attempts = 0
        while True:
            try:
                await handle()
            except LeaseHeldError as exc:
                held = exc
            except StorageError as exc:
                if not _fenced(exc):
                    raise
                attempts += 1  # the registry dropped the actor: look for the owner again
                if attempts >= MAX_ATTEMPTS:
                    raise
                log.warning("%s: %s; handled again where the session lives", label, exc)
                continue
            else:
                if deadline is not None:
                    self.taken_over += 1
                return
            node = await self.hops.live_node(held.owner)
            if node is not None:
                outcome = await self._hand_over(node, label, body)
                if outcome == "recorded":
                    self.relayed += 1
                    return
                if outcome == "moved":
                    attempts += 1
                    if attempts >= MAX_ATTEMPTS:
                        raise held
                    continue
            # Gone (or stopping: it releases its leases a moment after it leaves the nodes
            # table): claim again at its lease's expiry, or sooner, every POLL_SECONDS.
            now = time.monotonic()
            if deadline is None:
                deadline = now + self.hops.lease_seconds + EXTRA_SECONDS
            if now >= deadline:
                raise held
            wait = min(held.expires_in + 0.05, POLL_SECONDS, deadline - now)
            log.info(
                "%s: node %s is gone; taking the session over in %.2f s",
                label,
                held.owner,
                wait,
            )
            await asyncio.sleep(wait)

    async def _hand_over(self, node: NodeRecord, label: str, body: bytes) -> str:
        """``recorded``, ``moved`` (look again) or ``gone``; ``RelayFailedError`` on an error."""
        headers = {"content-type": "application/json", "accept-encoding": "identity"}
        headers |= await self.hops.signed("POST", RELAY_PATH, body)
        outgoing = self.hops.client.build_request(
            "POST", node.base_url.rstrip("/") + RELAY_PATH, headers=headers, content=body
        )
        answer = await self.hops.send_watching(outgoing, node)
        if answer is None:
            return "gone"
        try:
            await answer.aread()
        finally:
            await answer.aclose()
        if answer.status_code == 200:
            return "recorded"
        if answer.status_code == 503 and MOVED in answer.headers:
            return "moved"
        raise RelayFailedError(
            f"{label}: node {node.node_id} did not take the message handed to it "
            f"(HTTP {answer.status_code}: {answer.text[:200]}); it is delivered again"
        )

    # --- the owner -------------------------------------------------------------------------

    def _unpack(self, body: bytes) -> Unpacked | None:
        """The first receiver's that takes ``body``; ``ValueError`` when none does.

        None before any receiver listens (this node is still starting: handed again later).
        """
        if not self._receivers:
            return None
        refusals = []
        for receiver in self._receivers:
            try:
                return receiver.unpack(body)
            except ValueError as exc:
                refusals.append(str(exc))
        raise ValueError("; ".join(refusals))

    async def receive(self, body: bytes) -> tuple[int, dict[str, str]]:
        """Record a payload another node handed here: the HTTP status and headers to answer.

        The caller checked the hop's signature. No ledger claim: the sender holds it.
        """
        try:
            unpacked = self._unpack(body)
        except ValueError as exc:
            log.warning("a payload handed here was refused: %s", exc)
            return 400, {}
        if unpacked is None:  # what takes it failed to start here: the sender tries again later
            return 503, {"Retry-After": "1"}
        try:
            await unpacked.record()
        except LeaseHeldError as exc:  # moved on since the sender looked: it looks again
            return 503, {"Retry-After": "1", MOVED: exc.owner}
        except StorageError as exc:
            if _fenced(exc):
                return 503, {"Retry-After": "1", MOVED: "?"}
            log.exception("%s: a message handed here could not be recorded", unpacked.label)
            return 500, {}
        except Exception:
            log.exception("%s: a message handed here could not be recorded", unpacked.label)
            return 500, {}
        self.received += 1
        return 200, {}
