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
  an ``unknown``) has no text and is answered politely by the kit;
- ``media`` content with a ``url`` is a file the kit downloads (``gateways.external.media``),
  its kind read from ``media_type``: ``image``/``photo``, ``voice``, ``audio``,
  ``video``/``video_note``/``animation``, ``document``/``file``; another type (a sticker) is
  passed on by its kind only, as before. ``mime_type``, ``file_name`` and ``size`` are ours,
  optional: a gateway that knows them says them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import unquote, urlsplit

from duragent.core.attachments import AttachmentKind
from duragent.frontkit import ButtonPress, ChatType, InboundMessage, MediaRef, Sender
from duragent.gateways.external import protocol

__all__ = ["media_of", "message_of", "press_of"]

_CHAT_TYPES: dict[str, ChatType] = {"dm": "dm", "group": "group", "channel": "channel"}
_MEDIA_KINDS = {
    "image": AttachmentKind.IMAGE,
    "photo": AttachmentKind.IMAGE,
    "voice": AttachmentKind.VOICE,
    "audio": AttachmentKind.AUDIO,
    "video": AttachmentKind.VIDEO,
    "video_note": AttachmentKind.VIDEO,
    "animation": AttachmentKind.VIDEO,
    "document": AttachmentKind.DOCUMENT,
    "file": AttachmentKind.DOCUMENT,
}


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
        media=media_of(event.content),
        sent_at=_epoch(event.timestamp),
    )


def _epoch(timestamp: str | None) -> float | None:
    """An RFC 3339 ``timestamp`` as epoch seconds (None when absent or not one)."""
    if not timestamp:
        return None
    try:
        moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def media_of(content: protocol.Content) -> tuple[MediaRef, ...]:
    """The file a ``media`` content links to, as the kit's ``MediaRef`` (none: no file)."""
    kind = _MEDIA_KINDS.get((content.media_type or "").strip().lower())
    if content.type != "media" or kind is None or not content.url:
        return ()
    return (
        MediaRef(
            kind,
            content.url,
            url=content.url,
            name=content.file_name or _url_name(content.url, kind),
            mime=content.mime_type,
            size=content.size,
        ),
    )


def _url_name(url: str, kind: AttachmentKind) -> str | None:
    """The file name a link ends in (``…/report.pdf``), when it has one (a voice note: none)."""
    last = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
    return last if kind is not AttachmentKind.VOICE and "." in last.strip(".") else None


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
