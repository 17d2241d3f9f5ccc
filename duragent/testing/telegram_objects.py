"""Bot API objects (User, Chat, Message, CallbackQuery) as the JSON Telegram sends.

python-telegram-bot parses what the fake server answers with ``Message.de_json`` and friends,
which require some fields (a User's ``id``/``is_bot``/``first_name``, a Chat's ``id``/``type``,
a Message's ``message_id``/``date``/``chat``); building the dicts in one place keeps every
answer and every pushed update shaped alike. Entities of pushed messages (``@mentions`` and
``/commands``) are computed the way Telegram computes them, in UTF-16 offsets, so a gateway's
mention detection reads the same fields it reads in production.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from duragent.testing.telegram_html import utf16_len

__all__ = [
    "ChatType",
    "TelegramUser",
    "chat_object",
    "detect_entities",
    "document_object",
    "photo_sizes",
    "sticker_object",
    "user_object",
]

ChatType = Literal["private", "group", "supergroup", "channel"]
CHAT_TYPES: tuple[str, ...] = ("private", "group", "supergroup", "channel")

_MENTION_OR_COMMAND = re.compile(r"(?<![\w@/])(@[A-Za-z0-9_]{3,32}|/[A-Za-z0-9_]{1,64}(?:@\w+)?)")


@dataclass(frozen=True)
class TelegramUser:
    """A chat member who sends a pushed message or presses a button."""

    id: int
    first_name: str
    username: str | None = None
    is_bot: bool = False
    language_code: str | None = "en"

    @classmethod
    def default_for(cls, chat_id: int) -> TelegramUser:
        """The sender a test means when it names none: the chat's own user, or user 1 in groups.

        In a private chat Telegram's chat id is the user's id.
        """
        user_id = chat_id if chat_id > 0 else 1
        return cls(id=user_id, first_name=f"User{user_id}", username=f"user{user_id}")


def user_object(sender: TelegramUser) -> dict[str, Any]:
    """The ``User`` JSON of a sender."""
    user: dict[str, Any] = {
        "id": sender.id,
        "is_bot": sender.is_bot,
        "first_name": sender.first_name,
    }
    if sender.username:
        user["username"] = sender.username
    if sender.language_code and not sender.is_bot:
        user["language_code"] = sender.language_code
    return user


def chat_object(
    chat_id: int,
    chat_type: ChatType,
    *,
    title: str | None = None,
    sender: TelegramUser | None = None,
    is_forum: bool = False,
) -> dict[str, Any]:
    """The ``Chat`` JSON: private chats carry the user's names, the others a title."""
    if chat_type not in CHAT_TYPES:
        raise ValueError(f"chat_type must be one of {', '.join(CHAT_TYPES)}, not {chat_type!r}")
    chat: dict[str, Any] = {"id": chat_id, "type": chat_type}
    if chat_type == "private":
        who = sender or TelegramUser.default_for(chat_id)
        chat["first_name"] = who.first_name
        if who.username:
            chat["username"] = who.username
    else:
        chat["title"] = title or f"Chat {chat_id}"
        if is_forum:
            chat["is_forum"] = True
    return chat


def detect_entities(text: str) -> list[dict[str, Any]]:
    """``mention`` and ``bot_command`` entities in a user's text, as Telegram marks them."""
    entities: list[dict[str, Any]] = []
    for match in _MENTION_OR_COMMAND.finditer(text):
        token = match.group(0)
        entities.append(
            {
                "type": "mention" if token.startswith("@") else "bot_command",
                "offset": utf16_len(text[: match.start()]),
                "length": utf16_len(token),
            }
        )
    return entities


def photo_sizes(file_id: str) -> list[dict[str, Any]]:
    """A photo as Telegram sends it: the same picture in two sizes, smallest first."""
    return [
        {
            "file_id": f"{file_id}-s",
            "file_unique_id": f"{file_id}-us",
            "width": 90,
            "height": 60,
            "file_size": 1200,
        },
        {
            "file_id": file_id,
            "file_unique_id": f"{file_id}-u",
            "width": 1280,
            "height": 853,
            "file_size": 98000,
        },
    ]


def sticker_object(file_id: str, emoji: str) -> dict[str, Any]:
    """A regular static sticker."""
    return {
        "file_id": file_id,
        "file_unique_id": f"{file_id}-u",
        "type": "regular",
        "width": 512,
        "height": 512,
        "is_animated": False,
        "is_video": False,
        "emoji": emoji,
    }


def document_object(file_id: str, file_name: str, mime_type: str) -> dict[str, Any]:
    """A document (any file sent as a file)."""
    return {
        "file_id": file_id,
        "file_unique_id": f"{file_id}-u",
        "file_name": file_name,
        "mime_type": mime_type,
        "file_size": 2048,
    }
