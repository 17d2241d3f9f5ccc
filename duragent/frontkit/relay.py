"""A chat message handed to the node that owns its chat's session: the kit's relay.

With several nodes on one database, a chat's session lives on the node whose actor holds its
lease. Some platforms hand a message to a node that is not that one and never to the owner:

- Telegram **long polling** runs on one node (the polling leader), but the chat's session may
  be owned by another: the user also talked to it over HTTP there, a schedule ran there, or
  the bot just switched from webhook to polling;
- an **external gateway** whose platform delivers each message to one node (load-balanced,
  ``fans_out: false``).

Before, the node met ``LeaseHeldError`` until the owner's actor went idle (minutes): polling
asked Telegram for the update again and again and skipped it after five attempts (lost); a
plugin's message failed. Now ``OwnerRelay.serve`` runs the kit's pipeline here and, when it
meets another node's lease:

- **live owner** (registered, heartbeat fresh): the message, translated (``InboundMessage``
  or ``ButtonPress``), is POSTed to the owner's ``RELAY_PATH`` as a signed hop
  (``frontkit/hops.py``: the same scheme as the HTTP forwarding, no second one). The owner
  runs it through the same pipeline (``GatewayChats.front``), so its own in-order queue
  records and answers it, and replies through its own connection to the platform. Its 200
  means "recorded" (or deliberately dropped); only then does ``serve`` return, and only then
  does polling confirm the update's offset.
- **owner moved on** (it answers 503 with ``x-duragent-moved``, or this node's write was
  fenced): looked up again, up to ``MAX_ATTEMPTS`` times.
- **owner gone** (not registered, heartbeat stale, unreachable, or stalling while the hop
  waits): not waited on beyond its lease: ``serve`` retries the pipeline here until the
  lease expires (at most a lease and ``EXTRA_SECONDS``), and this node takes the session
  over (its actor replays it from the database).
- **nobody took it** (the owner answered an error, or the lease never ran out):
  ``RelayFailedError`` or ``LeaseHeldError`` reaches the adapter, which does not confirm the
  message (polling asks Telegram for it again, never skipping it for this reason).

Exactly once: the sending node keeps its claim on the message in the inbound ledger while
the owner records it, and settles it once the owner answered 200; the owner therefore
records without claiming (``receive``). A message sent twice anyway (the hop's answer lost
after the owner recorded it) is recognised by its platform id in the session
(``TurnRunner.accept``) and not answered twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any, Protocol

from duragent.errors import DuragentError, StorageError
from duragent.frontkit.hops import MOVED, Hops
from duragent.frontkit.inbound import ButtonPress, InboundMessage, Sender
from duragent.observability.metrics import Metrics
from duragent.store import FencedWriteError, LeaseHeldError, NodeDirectory, NodeRecord

__all__ = ["EXTRA_SECONDS", "RELAY_PATH", "OwnerRelay", "RelayFailedError", "Relayed"]

log = logging.getLogger(__name__)

RELAY_PATH = "/api/v1/cluster/chat-messages"
"""Where a node takes a chat message another node hands over (signed hops only)."""
MAX_ATTEMPTS = 6
"""Times the owner is looked up again (it moved on, or this node's write was fenced)."""
EXTRA_SECONDS = 2.0
"""How long past a gone owner's lease a message waits before it is given back unhandled."""
POLL_SECONDS = 0.5
"""While a gone owner's lease runs out, the session is claimed again this often."""

Relayed = InboundMessage | ButtonPress


class RelayFailedError(DuragentError):
    """The chat's owner did not take the message: it is recorded nowhere, deliver it again."""


class ChatReceiver(Protocol):
    """What takes a relayed message on the owner: a gateway's pipeline, without the ledger."""

    async def message(self, msg: InboundMessage) -> None:
        """Route, check and record ``msg`` (returns once it is on disk or dropped)."""
        ...

    async def press(self, press: ButtonPress) -> None:
        """Act on a button press."""
        ...


def to_wire(value: Relayed) -> bytes:
    """The JSON body of a hop carrying ``value``."""
    kind = "message" if isinstance(value, InboundMessage) else "press"
    return json.dumps({"kind": kind, "value": asdict(value)}, ensure_ascii=False).encode()


def from_wire(body: bytes) -> Relayed:
    """The value a hop carries (``ValueError`` when the body is not one)."""
    try:
        data = json.loads(body)
        fields: dict[str, Any] = dict(data["value"])
        sender = Sender(**fields.pop("sender"))
        if data["kind"] == "message":
            return InboundMessage(sender=sender, **fields)
        if data["kind"] == "press":
            return ButtonPress(sender=sender, **fields)
    except (TypeError, KeyError, AttributeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a relayed chat message: {exc}") from None
    raise ValueError(f"not a relayed chat message: kind {data['kind']!r}")


def _fenced(exc: BaseException) -> bool:
    """This node lost the session while handling (before or after recording anything)."""
    return isinstance(exc, FencedWriteError) or (
        isinstance(exc, StorageError) and isinstance(exc.__cause__, FencedWriteError)
    )


class OwnerRelay:
    """Hands chat messages to their session's owner, and takes those handed here (see above)."""

    def __init__(self, nodes: NodeDirectory, lease_seconds: float) -> None:
        self.hops = Hops(nodes, lease_seconds)
        self._receivers: dict[str, ChatReceiver] = {}
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

    def register(self, gateway: str, receiver: ChatReceiver) -> None:
        """Take messages of ``gateway`` handed here with ``receiver`` (its pipeline)."""
        self._receivers[gateway] = receiver

    async def aclose(self) -> None:
        """Close the connections to other nodes."""
        await self.hops.aclose()

    # --- the node a message reached --------------------------------------------------------

    async def serve(self, value: Relayed, handle: Callable[[], Awaitable[None]]) -> None:
        """``handle()`` here, at the live owner of the chat's session, or here after it left."""
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
                log.warning("%s: %s; handled again where the session lives", value.chat.target, exc)
                continue
            else:
                if deadline is not None:
                    self.taken_over += 1
                return
            node = await self.hops.live_node(held.owner)
            if node is not None:
                outcome = await self._hand_over(node, value)
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
                value.chat.target,
                held.owner,
                wait,
            )
            await asyncio.sleep(wait)

    async def _hand_over(self, node: NodeRecord, value: Relayed) -> str:
        """``recorded``, ``moved`` (look again) or ``gone``; ``RelayFailedError`` on an error."""
        body = to_wire(value)
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
            f"{value.chat.target}: node {node.node_id} did not take the message handed to it "
            f"(HTTP {answer.status_code}: {answer.text[:200]}); it is delivered again"
        )

    # --- the owner -------------------------------------------------------------------------

    async def receive(self, body: bytes) -> tuple[int, dict[str, str]]:
        """Record a message another node handed here: the HTTP status and headers to answer.

        The caller checked the hop's signature. No ledger claim: the sender holds it.
        """
        try:
            value = from_wire(body)
        except ValueError as exc:
            log.warning("a relayed chat message was refused: %s", exc)
            return 400, {}
        receiver = self._receivers.get(value.gateway)
        if receiver is None:  # the gateway failed to start here: the sender tries again later
            log.warning("%s: handed a message; its gateway does not run here", value.chat.target)
            return 503, {"Retry-After": "1"}
        try:
            if isinstance(value, InboundMessage):
                await receiver.message(value)
            else:
                await receiver.press(value)
        except LeaseHeldError as exc:  # moved on since the sender looked: it looks again
            return 503, {"Retry-After": "1", MOVED: exc.owner}
        except StorageError as exc:
            if _fenced(exc):
                return 503, {"Retry-After": "1", MOVED: "?"}
            log.exception("%s: a message handed here could not be recorded", value.chat.target)
            return 500, {}
        except Exception:
            log.exception("%s: a message handed here could not be recorded", value.chat.target)
            return 500, {}
        self.received += 1
        return 200, {}
