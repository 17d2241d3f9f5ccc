"""Telegram updates as the kit's platform-neutral values (``InboundMessage``, ``ButtonPress``).

The only place that reads python-telegram-bot's ``Update``: everything after this decides on
the kit's types, so the Discord gateway and external plugins share every decision. Follows the
reference's Telegram gateway for the facts: ``private`` is a DM, ``supergroup`` a group; the
bot is mentioned by an ``@username`` entity (case-insensitive) or a text mention of its user
id; a reply to one of the bot's messages triggers it too; a topic's ``message_thread_id`` is
kept. Improved: a photo, voice note, audio, document or video is passed on with its files
(``media``: ``MediaRef`` s the kit downloads, keeps and shows the model) and its caption as
the text; other content without text (a sticker, a location) is passed on as ``text=None``
with its kind, so the kit can answer politely instead of ignoring the person. Edited messages
and channel posts are not asked for (``ALLOWED_UPDATES``), as in the reference, where an edit
is not a new turn.
"""

from __future__ import annotations

from dataclasses import dataclass

from telegram import Message, MessageEntity, Update, User

from duragent.frontkit import ButtonPress, ChatType, InboundMessage, Sender
from duragent.gateways.telegram.media import media_of

__all__ = ["ALLOWED_UPDATES", "TelegramBotIdentity", "translate"]

GATEWAY = "telegram"

ALLOWED_UPDATES = ("message", "callback_query")
"""What ``getUpdates`` / ``setWebhook`` ask for: new messages and button presses."""

_CHAT_TYPES: dict[str, ChatType] = {
    "private": "dm",
    "group": "group",
    "supergroup": "group",
    "channel": "channel",
}

_KINDS = (
    "photo",
    "video",
    "animation",
    "audio",
    "voice",
    "video_note",
    "document",
    "sticker",
    "location",
    "venue",
    "contact",
    "poll",
    "dice",
)


@dataclass(frozen=True, slots=True)
class TelegramBotIdentity:
    """The bot as ``getMe`` describes it: how mentions and replies to it are recognised."""

    user_id: int
    username: str


def translate(
    update: Update,
    bot: TelegramBotIdentity,
    *,
    gateway: str = GATEWAY,
    max_photo_bytes: int | None = None,
) -> InboundMessage | ButtonPress | None:
    """The update as the kit's value, or ``None`` for an update the kit does not handle.

    ``max_photo_bytes``: a photo's largest size within it is the one taken.
    """
    if update.callback_query is not None:
        query = update.callback_query
        message = query.message
        if query.data is None or message is None:
            return None
        return ButtonPress(
            gateway=gateway,
            chat_id=str(message.chat.id),
            callback_id=query.id,
            sender=_sender(query.from_user),
            message_id=str(message.message_id),
            data=query.data,
        )
    message = update.message
    if message is None:
        return None  # edits, channel posts, reactions…: not asked for, ignored if sent
    mentions, replies = _triggers(message, bot)
    reply_to = message.reply_to_message
    return InboundMessage(
        gateway=gateway,
        chat_id=str(message.chat.id),
        chat_type=_CHAT_TYPES.get(message.chat.type, "group"),
        message_id=str(message.message_id),
        sender=_poster(message),
        text=message.text if message.text is not None else message.caption,
        content_kind=_kind(message),
        thread_id=str(message.message_thread_id) if message.message_thread_id else None,
        mentions_bot=mentions,
        reply_to_bot=replies,
        reply_to_message_id=str(reply_to.message_id) if reply_to else None,
        media=media_of(message, max_photo_bytes=max_photo_bytes),
        sent_at=message.date.timestamp() if message.date else None,
    )


def _poster(message: Message) -> Sender:
    """Who wrote ``message``: the chat it was sent as, when it was sent as one.

    A post "as a channel" or by an anonymous group admin comes from a stand-in user shared by
    everyone who posts that way (``Channel_Bot``, ``GroupAnonymousBot``); ``sender_chat``
    names the channel or group behind it. The stand-in's id would make different people one
    sender: they could answer each other's approvals, share a rate window, and a blocked
    person could post past the block as a channel.
    """
    posted_as = message.sender_chat
    if posted_as is not None:
        return Sender(
            id=str(posted_as.id),
            username=posted_as.username,
            display_name=posted_as.title or posted_as.full_name or None,
        )
    return _sender(message.from_user) if message.from_user else Sender(id="unknown")


def _sender(user: User) -> Sender:
    name = " ".join(p for p in (user.first_name, user.last_name) if p).strip()
    return Sender(id=str(user.id), username=user.username, display_name=name or None)


def _kind(message: Message) -> str:
    if message.text is not None:
        return "text"
    for kind in _KINDS:
        if getattr(message, kind, None):
            return kind
    return "other"


def _triggers(message: Message, bot: TelegramBotIdentity) -> tuple[bool, bool]:
    """Whether the message mentions the bot, and whether it replies to one of its messages."""
    entities = (
        message.parse_entities() if message.text is not None else message.parse_caption_entities()
    )
    mentions = False
    wanted = bot.username.casefold()
    for entity, text in entities.items():
        if entity.type == MessageEntity.MENTION:
            mentions = mentions or text.removeprefix("@").casefold() == wanted
        elif entity.type == MessageEntity.TEXT_MENTION and entity.user is not None:
            mentions = mentions or entity.user.id == bot.user_id
    reply = message.reply_to_message
    replies = bool(reply and reply.from_user and reply.from_user.id == bot.user_id)
    return mentions, replies
