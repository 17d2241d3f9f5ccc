"""A gateway's ``message_received`` and ``callback_query`` as the kit's values.

The only place that reads those two events: routing, access, mention gating, queueing,
commands and approvals are then decided by the kit on ``InboundMessage`` / ``ButtonPress``,
exactly as for Telegram. Facts kept from the reference:

- the gateway is the **configured name** (what ``routes[].match.gateway`` names), not the
  event's ``routing.channel``, which the gateway chooses;
- the chat is the event's ``chat_id``; its type is ``routing.chat_type`` (``dm``, ``group``,
  ``channel``; case does not matter; anything else is treated as a ``group``, the stricter
  choice under access rules); a thread is ``routing.thread_id`` when the gateway sends one;
- the text is the text, or a media message's caption; other content (a location, a contact,
  an ``unknown``) has no text and is answered politely by the kit.
"""

from __future__ import annotations

from duragent.frontkit import ButtonPress, ChatType, InboundMessage, Sender
from duragent.gateways.external import protocol

__all__ = ["message_of", "press_of"]

_CHAT_TYPES: dict[str, ChatType] = {"dm": "dm", "group": "group", "channel": "channel"}


def _sender(sender: protocol.SenderEvent) -> Sender:
    return Sender(id=sender.id, username=sender.username, display_name=sender.display_name)


def message_of(gateway: str, event: protocol.MessageReceived) -> InboundMessage:
    """``message_received`` from the gateway named ``gateway``, as the kit's message."""
    routing = event.routing
    return InboundMessage(
        gateway=gateway,
        chat_id=event.chat_id,
        chat_type=_CHAT_TYPES.get(routing.chat_type.strip().lower(), "group"),
        message_id=event.message_id,
        sender=_sender(event.sender),
        text=event.content.as_text(),
        content_kind=event.content.kind(),
        thread_id=routing.extra("thread_id"),
        mentions_bot=event.mentions_bot,
        reply_to_bot=event.reply_to_bot,
        reply_to_message_id=event.reply_to,
    )


def press_of(gateway: str, event: protocol.CallbackQuery) -> ButtonPress:
    """``callback_query`` from the gateway named ``gateway``, as the kit's button press."""
    return ButtonPress(
        gateway=gateway,
        chat_id=event.chat_id,
        callback_id=event.callback_query_id,
        sender=_sender(event.sender),
        message_id=event.message_id,
        data=event.data,
    )
