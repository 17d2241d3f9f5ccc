"""Chat messages over the cluster's relay: their wire form, and the gateways that take them.

``cluster.relay.OwnerRelay`` hands a payload to the node that owns its session and knows
nothing of chat messages (the cluster layer sits below the kit). ``ChatRelay`` is the kit's
side of it: a message or button press that must be handled at its chat's owner is encoded
(``to_wire``: ``InboundMessage`` or ``ButtonPress`` as JSON) and handed over; on the owner,
the body is decoded (``from_wire``) and run through the pipeline of the gateway it came from
(``GatewayChats.front``), registered here as each gateway is assembled.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any, Protocol

from duragent.cluster import OwnerRelay, Unpacked
from duragent.frontkit.inbound import ButtonPress, InboundMessage, MediaRef, Sender

__all__ = ["ChatReceiver", "ChatRelay", "Relayed", "from_wire", "to_wire"]

log = logging.getLogger(__name__)

Relayed = InboundMessage | ButtonPress


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
            media = tuple(MediaRef.of(ref) for ref in fields.pop("media", None) or ())
            return InboundMessage(sender=sender, media=media, **fields)
        if data["kind"] == "press":
            return ButtonPress(sender=sender, **fields)
    except (TypeError, KeyError, AttributeError, ValueError) as exc:  # JSONDecodeError too
        raise ValueError(f"not a relayed chat message: {exc}") from None
    raise ValueError(f"not a relayed chat message: kind {data['kind']!r}")


class ChatRelay:
    """The chat gateways' messages handed to their session's owner over ``relay``."""

    def __init__(self, relay: OwnerRelay) -> None:
        self.relay = relay
        self._receivers: dict[str, ChatReceiver] = {}
        relay.listen(self)

    def register(self, gateway: str, receiver: ChatReceiver) -> None:
        """Take messages of ``gateway`` handed here with ``receiver`` (its pipeline)."""
        self._receivers[gateway] = receiver

    async def serve(self, value: Relayed, handle: Callable[[], Awaitable[None]]) -> None:
        """``handle()`` here, at the live owner of the chat's session, or here after it left."""
        await self.relay.serve(value.chat.target, to_wire(value), handle)

    def unpack(self, body: bytes) -> Unpacked | None:
        """The message another node handed here, and its gateway's pipeline to record it.

        None when that gateway does not run here; ``ValueError`` for a body that is none.
        """
        value = from_wire(body)
        receiver = self._receivers.get(value.gateway)
        if receiver is None:  # the gateway failed to start here: the sender tries again later
            log.warning("%s: handed a message; its gateway does not run here", value.chat.target)
            return None
        if isinstance(value, InboundMessage):
            return Unpacked(value.chat.target, lambda: receiver.message(value))
        return Unpacked(value.chat.target, lambda: receiver.press(value))
