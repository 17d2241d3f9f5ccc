"""What the fake Telegram remembers of messages changing: text edits, drafts and deletions.

A reply streamed into a chat is one message edited many times (``editMessageText``), or, in a
private chat, a draft the client animates (``sendMessageDraft``, Bot API 9.x) until the bot
sends the final message; a preview cut short may be deleted. Tests ask what the user saw at
each step and at the end, and how often the bot edited (Telegram limits edits per chat as it
limits sends), so each accepted change is recorded in order with its time:

- ``MessageEdit``: one accepted ``editMessageText`` (the visible text after parsing, the
  message as it then was); refused edits ("message is not modified", a 429) are only in the
  call log.
- ``DraftUpdate``: one accepted ``sendMessageDraft``. Telegram takes drafts in private chats
  only (elsewhere: 400 "TEXTDRAFT_PEER_INVALID"); ``draft_id`` must be non-zero; an empty
  ``text`` shows a "Thinking…" placeholder. A draft is not a message: it gets no id, and
  ``sent_messages`` does not show it.
- ``Deletion``: one accepted ``deleteMessage`` (the message's text or caption as it was).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from duragent.testing.telegram_html import ParsedText
from duragent.testing.telegram_methods import Answer, BotMethods, chat_id_of, error, int_param, ok

__all__ = ["ChatChanges", "Deletion", "DraftUpdate", "MessageEdit"]

ChatId = int | str


@dataclass(frozen=True)
class MessageEdit:
    """One accepted text edit of a bot message."""

    chat_id: ChatId
    message_id: int
    text: str
    """The visible text after the edit (HTML parsed away)."""
    entities: list[dict[str, Any]] = field(default_factory=list)
    parse_mode: str | None = None
    time: float = 0.0
    """``time.monotonic()`` when the fake applied it."""

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (``GET /_fake/edits``)."""
        return {
            "chat_id": self.chat_id,
            "message_id": self.message_id,
            "text": self.text,
            "entities": self.entities,
            "parse_mode": self.parse_mode,
            "time": self.time,
        }


@dataclass(frozen=True)
class DraftUpdate:
    """One accepted ``sendMessageDraft``: what the user's client showed as being written."""

    chat_id: ChatId
    draft_id: int
    text: str
    """Visible text ("" for the placeholder)."""
    entities: list[dict[str, Any]] = field(default_factory=list)
    parse_mode: str | None = None
    message_thread_id: int | None = None
    time: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (``GET /_fake/drafts``)."""
        return {
            "chat_id": self.chat_id,
            "draft_id": self.draft_id,
            "text": self.text,
            "entities": self.entities,
            "parse_mode": self.parse_mode,
            "message_thread_id": self.message_thread_id,
            "time": self.time,
        }


@dataclass(frozen=True)
class Deletion:
    """One accepted ``deleteMessage``."""

    chat_id: ChatId
    message_id: int
    text: str | None
    """The message's text (or caption) when it was deleted."""
    time: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (``GET /_fake/deleted``)."""
        return {
            "chat_id": self.chat_id,
            "message_id": self.message_id,
            "text": self.text,
            "time": self.time,
        }


class ChatChanges:
    """The edit, draft and delete methods and their records (not thread-safe: the fake locks)."""

    def __init__(self, methods: BotMethods, clock: Callable[[], float] = time.monotonic) -> None:
        self._methods = methods
        self._clock = clock
        self._edit_text = methods.edit_message_text
        self.edits: list[MessageEdit] = []
        self.drafts: list[DraftUpdate] = []
        self.deletions: list[Deletion] = []

    def table(self) -> dict[str, Callable[[dict[str, Any]], Answer]]:
        """The methods, for ``BotMethods.table`` (``editMessageText`` recorded around its own)."""
        return {
            "editMessageText": self.edit_message_text,
            "sendMessageDraft": self.send_message_draft,
            "deleteMessage": self.delete_message,
        }

    def edit_message_text(self, params: dict[str, Any]) -> Answer:
        """``BotMethods.edit_message_text``, and a ``MessageEdit`` when it was accepted."""
        status, body = self._edit_text(params)
        result = body.get("result")
        if status == 200 and isinstance(result, dict):
            self.edits.append(
                MessageEdit(
                    result["chat"]["id"],
                    result["message_id"],
                    result.get("text", ""),
                    list(result.get("entities", [])),
                    _mode(params),
                    self._clock(),
                )
            )
        return status, body

    def send_message_draft(self, params: dict[str, Any]) -> Answer:
        """Show a draft being written in a private chat (nothing is kept as a message)."""
        chat_id = chat_id_of(params)
        if chat_id is None:
            return error(400, "Bad Request: chat_id is empty")
        draft_id = int_param(params, "draft_id")
        if not draft_id:
            return error(400, "Bad Request: draft_id must be non-zero")
        chat = self._methods.store.known_chat(chat_id)
        if chat is None:
            return error(400, "Bad Request: chat not found")
        if chat["type"] != "private":
            return error(400, "Bad Request: TEXTDRAFT_PEER_INVALID")
        parsed = ParsedText("")
        if params.get("text"):
            rendered = self._methods.render(params)
            if not isinstance(rendered, ParsedText):
                return rendered
            parsed = rendered
        self.drafts.append(
            DraftUpdate(
                chat_id,
                draft_id,
                parsed.text,
                list(parsed.entities),
                _mode(params),
                int_param(params, "message_thread_id"),
                self._clock(),
            )
        )
        return ok(True)

    def delete_message(self, params: dict[str, Any]) -> Answer:
        """Delete a message: any in a private chat, only the bot's own elsewhere."""
        chat_id, message_id = chat_id_of(params), int_param(params, "message_id")
        if chat_id is None or message_id is None:
            return error(400, "Bad Request: message identifier is not specified")
        store = self._methods.store
        message = store.message(chat_id, message_id)
        if message is None:
            return error(400, "Bad Request: message to delete not found")
        own = message.get("from", self._methods.bot)["id"] == self._methods.bot["id"]
        if not own and message["chat"]["type"] != "private":
            return error(400, "Bad Request: message can't be deleted")
        del store.messages[(chat_id, message_id)]
        text = message.get("text", message.get("caption"))
        self.deletions.append(Deletion(chat_id, message_id, text, self._clock()))
        return ok(True)


def _mode(params: dict[str, Any]) -> str | None:
    mode = params.get("parse_mode")
    return mode if isinstance(mode, str) and mode else None
