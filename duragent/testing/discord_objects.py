"""Discord API objects as JSON, the shapes discord.py 2.7 parses (for ``FakeDiscord``).

Only the fields discord.py reads without a default, plus the ones a gateway looks at
(mentions, references, attachments, stickers, components), following Discord's API reference
(v10). Pure functions: the fake server keeps the state, these only build payloads.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DM_CHANNEL",
    "GUILD_TEXT",
    "PUBLIC_THREAD",
    "Person",
    "Snowflakes",
    "application_object",
    "attachment_object",
    "channel_object",
    "guild_object",
    "interaction_object",
    "message_object",
    "snowflakes",
    "user_object",
]

DM_CHANNEL = 1
GUILD_TEXT = 0
PUBLIC_THREAD = 11
MESSAGE_COMPONENT = 3
BUTTON = 2

_EPOCH_MS = 1_420_070_400_000


class Snowflakes:
    """Ids as Discord makes them: increasing, each with the time it was made in its top bits.

    The time is taken at each id (not once, at the start): a message's id says when it was
    sent, and the gateway counts a sender's rate by it (``InboundMessage.sent_at``).
    ``start_ms`` fixes the time of every id instead (ids then just count up).
    """

    def __init__(self, start_ms: int | None = None) -> None:
        self._fixed = start_ms
        self._last = 0

    def __iter__(self) -> Snowflakes:
        return self

    def __next__(self) -> int:
        now = int(time.time() * 1000) if self._fixed is None else self._fixed
        self._last = max(self._last + 1, (now - _EPOCH_MS) << 22)
        return self._last


def snowflakes(start_ms: int | None = None) -> Snowflakes:
    """Ids as Discord makes them (``Snowflakes``)."""
    return Snowflakes(start_ms)


def _iso(ms: int | None = None) -> str:
    seconds = (ms if ms is not None else int(time.time() * 1000)) / 1000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + "+00:00"


@dataclass(frozen=True, slots=True)
class Person:
    """A Discord user: ``username`` is unique, ``global_name`` shown, ``nick`` per guild."""

    id: int
    username: str
    global_name: str | None = None
    nick: str | None = None
    bot: bool = False


def user_object(person: Person) -> dict[str, Any]:
    """A user object."""
    user: dict[str, Any] = {
        "id": str(person.id),
        "username": person.username,
        "global_name": person.global_name,
        "discriminator": "0",
        "avatar": None,
    }
    if person.bot:
        user["bot"] = True
    return user


def member_object(person: Person, *, with_user: bool = False) -> dict[str, Any]:
    """A guild member object (the ``member`` beside a message's ``author``)."""
    member: dict[str, Any] = {
        "nick": person.nick,
        "roles": [],
        "joined_at": _iso(),
        "deaf": False,
        "mute": False,
        "flags": 0,
    }
    if with_user:
        member["user"] = user_object(person)
    return member


def channel_object(
    channel_id: int, kind: int, *, guild_id: int | None = None, parent_id: int | None = None
) -> dict[str, Any]:
    """A DM channel, a guild text channel or a public thread."""
    channel: dict[str, Any] = {"id": str(channel_id), "type": kind}
    if kind == DM_CHANNEL:
        channel["recipients"] = []
        return channel
    channel.update(guild_id=str(guild_id), name=f"channel-{channel_id}", position=0)
    channel.update(permission_overwrites=[], nsfw=False, parent_id=None)
    if kind == PUBLIC_THREAD:
        channel.update(
            parent_id=str(parent_id),
            owner_id="1",
            message_count=0,
            member_count=1,
            rate_limit_per_user=0,
            thread_metadata={
                "archived": False,
                "auto_archive_duration": 1440,
                "archive_timestamp": _iso(),
                "locked": False,
            },
        )
    return channel


def guild_object(guild_id: int, channels: list[dict[str, Any]], bot: Person) -> dict[str, Any]:
    """A ``GUILD_CREATE`` payload: the guild, its text channels and threads, the bot."""
    return {
        "id": str(guild_id),
        "name": f"guild-{guild_id}",
        "icon": None,
        "owner_id": "1",
        "roles": [],
        "emojis": [],
        "stickers": [],
        "features": [],
        "member_count": 2,
        "members": [member_object(bot, with_user=True)],
        "channels": [c for c in channels if c["type"] != PUBLIC_THREAD],
        "threads": [c for c in channels if c["type"] == PUBLIC_THREAD],
        "voice_states": [],
        "presences": [],
        "large": False,
        "unavailable": False,
        "joined_at": _iso(),
        "premium_tier": 0,
        "preferred_locale": "en-US",
        "afk_timeout": 300,
        "verification_level": 0,
        "default_message_notifications": 0,
        "explicit_content_filter": 0,
        "mfa_level": 0,
        "nsfw_level": 0,
        "system_channel_flags": 0,
    }


def application_object(bot: Person, owner: Person) -> dict[str, Any]:
    """``/oauth2/applications/@me``: the bot's application."""
    return {
        "id": str(bot.id),
        "name": bot.username,
        "icon": None,
        "description": "",
        "bot_public": True,
        "bot_require_code_grant": False,
        "owner": user_object(owner),
        "verify_key": "0" * 64,
        "flags": 0,
    }


def message_object(
    message_id: int,
    channel_id: int,
    author: Person,
    content: str,
    *,
    guild_id: int | None = None,
    mentions: Sequence[Person] = (),
    reference: dict[str, Any] | None = None,
    attachments: Sequence[dict[str, Any]] = (),
    stickers: Sequence[dict[str, Any]] = (),
    components: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """A message (``MESSAGE_CREATE``'s payload, and what REST sends back)."""
    message: dict[str, Any] = {
        "id": str(message_id),
        "channel_id": str(channel_id),
        "author": user_object(author),
        "content": content,
        "timestamp": _iso(),
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": [
            {**user_object(p), **({"member": member_object(p)} if guild_id else {})}
            for p in mentions
        ],
        "mention_roles": [],
        "attachments": list(attachments),
        "embeds": [],
        "pinned": False,
        "type": 19 if reference else 0,
        "flags": 0,
        "components": list(components),
        "sticker_items": list(stickers),
    }
    if guild_id is not None:
        message["guild_id"] = str(guild_id)
        message["member"] = member_object(author)
    if reference is not None:
        message["message_reference"] = {
            "type": 0,
            "message_id": reference["id"],
            "channel_id": str(channel_id),
            **({"guild_id": str(guild_id)} if guild_id else {}),
        }
        message["referenced_message"] = reference
    return message


def attachment_object(
    attachment_id: int,
    filename: str,
    size: int,
    url: str,
    proxy_url: str,
    *,
    content_type: str | None = None,
    width: int | None = None,
    height: int | None = None,
    description: str | None = None,
    duration_secs: float | None = None,
    waveform: str | None = None,
) -> dict[str, Any]:
    """An attachment of a message, as discord.py's ``Attachment`` reads it.

    Images carry ``width``/``height``, voice messages ``duration_secs`` and ``waveform``
    (base64 of up to 256 amplitude bytes).
    """
    attachment: dict[str, Any] = {
        "id": str(attachment_id),
        "filename": filename,
        "size": size,
        "url": url,
        "proxy_url": proxy_url,
    }
    optional = {
        "content_type": content_type,
        "width": width,
        "height": height,
        "description": description,
        "duration_secs": duration_secs,
        "waveform": waveform,
    }
    attachment.update({k: v for k, v in optional.items() if v is not None})
    return attachment


def interaction_object(
    interaction_id: int,
    token: str,
    application_id: int,
    presser: Person,
    message: dict[str, Any],
    custom_id: str,
    channel: dict[str, Any],
) -> dict[str, Any]:
    """``INTERACTION_CREATE`` for a press on one of ``message``'s buttons in ``channel``."""
    interaction: dict[str, Any] = {
        "id": str(interaction_id),
        "type": MESSAGE_COMPONENT,
        "token": token,
        "version": 1,
        "application_id": str(application_id),
        "channel_id": message["channel_id"],
        "channel": channel,
        "data": {"custom_id": custom_id, "component_type": BUTTON},
        "message": message,
        "locale": "en-US",
        "app_permissions": "0",
        "entitlements": [],
        "attachment_size_limit": 8 * 1024 * 1024,
        "authorizing_integration_owners": {},
    }
    guild_id = message.get("guild_id")
    if guild_id is not None:
        interaction["guild_id"] = guild_id
        interaction["guild_locale"] = "en-US"
        interaction["member"] = {**member_object(presser), "user": user_object(presser)}
        interaction["context"] = 0
    else:
        interaction["user"] = user_object(presser)
        interaction["context"] = 1
    return interaction
