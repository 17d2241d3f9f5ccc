"""Discord messages and button presses as the kit's values (``InboundMessage``, ``ButtonPress``).

The only place that reads discord.py's ``Message`` and ``Interaction``: everything after this
decides on the kit's types, as for Telegram. The facts, from the reference's Discord gateway
where it has them:

- a DM channel is a ``dm``; a guild text channel, a thread or a voice channel's text chat is a
  ``group`` (a thread is its own chat: its id is the chat id and the ``thread_id``);
- the bot is addressed when it is among the message's ``mentions`` (a ``<@id>`` in the text,
  or the ping of a reply) or when the message replies to one of the bot's messages;
- the bot's own mention at the start of the text is dropped (``@bot /status`` is the command
  ``/status``, ``@bot hello`` reaches the model as ``hello``; a bare ``@bot`` as the bot's
  name), and other user mentions read as ``@name``, so the model sees names, not ``<@1234>``;
- an attachment's kind is read from its content type (an ``audio/*`` one of a voice message
  is a voice note); each is passed on as a ``MediaRef`` the kit downloads from its signed
  CDN link (``media``), and its message text counts as a caption;
- messages by bots (this one included) and system messages (joins, pins, thread starts) are
  not for the kit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import discord

from duragent.core.attachments import AttachmentKind
from duragent.frontkit import ButtonPress, ChatType, InboundMessage, MediaRef, Sender

__all__ = ["GATEWAY", "DiscordBotIdentity", "media_of", "press_of", "translate"]

GATEWAY = "discord"

_USER_MENTION = re.compile(r"<@!?(\d+)>")
_CONVERSATION = (discord.MessageType.default, discord.MessageType.reply)


@dataclass(frozen=True, slots=True)
class DiscordBotIdentity:
    """The bot as ``/users/@me`` describes it: how mentions and replies to it are recognised."""

    user_id: int
    username: str


def sender_of(user: discord.abc.User) -> Sender:
    """Who wrote or pressed: the id, the username, and the name people see (nick first)."""
    display = getattr(user, "nick", None) or user.global_name
    return Sender(id=str(user.id), username=user.name or None, display_name=display or None)


def chat_type_of(message: discord.Message) -> ChatType:
    """``dm`` for a direct message, ``group`` for anything in a guild (cached or not)."""
    if message.guild is not None or getattr(message.channel, "guild_id", None) is not None:
        return "group"
    return "dm"


def translate(message: discord.Message, bot: DiscordBotIdentity) -> InboundMessage | None:
    """The message as the kit's value, or ``None`` for one the kit does not handle."""
    if message.author.bot or message.type not in _CONVERSATION:
        return None
    channel = message.channel
    mentions = any(user.id == bot.user_id for user in message.mentions)
    reference = message.reference
    resolved = reference.resolved if reference is not None else None
    replies = isinstance(resolved, discord.Message) and resolved.author.id == bot.user_id
    text = _readable(message, bot)
    return InboundMessage(
        gateway=GATEWAY,
        chat_id=str(channel.id),
        chat_type=chat_type_of(message),
        message_id=str(message.id),
        sender=sender_of(message.author),
        text=text if text else None,
        content_kind=_kind(message),
        thread_id=str(channel.id) if isinstance(channel, discord.Thread) else None,
        mentions_bot=mentions,
        reply_to_bot=replies,
        reply_to_message_id=(
            str(reference.message_id) if reference and reference.message_id else None
        ),
        media=media_of(message),
        sent_at=message.created_at.timestamp(),
    )


def media_of(message: discord.Message) -> tuple[MediaRef, ...]:
    """The message's attachments, each as the kit's ``MediaRef`` (its CDN link to fetch)."""
    voice = message.flags.voice
    return tuple(
        MediaRef(
            _attachment_kind(item, voice=voice),
            str(item.id),
            unique_id=str(item.id),
            url=item.url,
            name=item.filename or None,
            mime=item.content_type,
            size=item.size,
        )
        for item in message.attachments
    )


def _attachment_kind(item: discord.Attachment, *, voice: bool) -> AttachmentKind:
    family = (item.content_type or "").split("/", 1)[0]
    if family == "audio":
        return AttachmentKind.VOICE if voice or item.is_voice_message() else AttachmentKind.AUDIO
    return {"image": AttachmentKind.IMAGE, "video": AttachmentKind.VIDEO}.get(
        family, AttachmentKind.DOCUMENT
    )


def press_of(interaction: discord.Interaction, custom_id: str) -> ButtonPress | None:
    """A press on one of the bot's buttons as the kit's value (``None`` without a message)."""
    message = interaction.message
    if message is None:
        return None
    return ButtonPress(
        gateway=GATEWAY,
        chat_id=str(interaction.channel_id or message.channel.id),
        callback_id=str(interaction.id),
        sender=sender_of(interaction.user),
        message_id=str(message.id),
        data=custom_id,
    )


def _readable(message: discord.Message, bot: DiscordBotIdentity) -> str:
    """The text with the bot's leading mention dropped and other mentions as ``@name``."""
    text = message.content
    while (lead := _USER_MENTION.match(text.lstrip())) and int(lead[1]) == bot.user_id:
        text = text.lstrip()[lead.end() :]
    if not text.strip() and message.content.strip() and not _media(message):
        return f"@{bot.username}"  # a bare "@bot" is a greeting, as on Telegram
    names = {user.id: sender_of(user).label for user in message.mentions}
    names[bot.user_id] = bot.username

    def named(match: re.Match[str]) -> str:
        name = names.get(int(match[1]))
        return f"@{name}" if name else match[0]

    return _USER_MENTION.sub(named, text).strip() if text.strip() else text


def _kind(message: discord.Message) -> str:
    """``text``, or what else the message carries (``photo``, ``sticker``…)."""
    if message.stickers:
        return "sticker"
    if message.attachments:
        kind = (message.attachments[0].content_type or "").split("/", 1)[0]
        return {"image": "photo", "video": "video", "audio": "audio"}.get(kind, "document")
    return "text" if message.content else "other"


def _media(message: discord.Message) -> bool:
    return bool(message.stickers or message.attachments)
