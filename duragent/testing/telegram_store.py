"""What the fake Telegram remembers: chats, their messages, and the updates not yet confirmed.

Telegram numbers messages per chat, one sequence shared by the users' and the bot's messages,
so a reply or a button press refers to ``(chat_id, message_id)``; ``ChatStore`` keeps that.
``UpdateQueue`` holds updates until the bot confirms them: a ``getUpdates`` with ``offset``
confirms (and forgets) every update below it, and an unconfirmed update is delivered again by
the next call — which is what lets a bot killed mid-batch see its updates once more after a
restart, and what a restart test checks. Neither class locks: ``FakeTelegram`` serialises.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from duragent.testing.telegram_objects import ChatType, TelegramUser, chat_object

__all__ = ["ChatStore", "UpdateQueue"]

ChatId = int | str


@dataclass
class ChatStore:
    """Chats seen by the fake, and every message sent in them (by users and by the bot)."""

    strict_chats: bool = False
    """Answer "chat not found" to sends into a chat no update came from (Telegram's rule)."""
    chats: dict[ChatId, dict[str, Any]] = field(default_factory=dict)
    messages: dict[tuple[ChatId, int], dict[str, Any]] = field(default_factory=dict)
    _last_message_id: dict[ChatId, int] = field(default_factory=dict)
    _callback_queries: dict[str, bool] = field(default_factory=dict)
    clock: Callable[[], float] = time.time
    """The Unix time messages are dated with (``FakeTelegram(clock=…)``: a simulated one)."""

    def now(self) -> int:
        """Telegram dates are whole Unix seconds."""
        return int(self.clock())

    def chat(
        self,
        chat_id: ChatId,
        chat_type: ChatType | None = None,
        *,
        title: str | None = None,
        sender: TelegramUser | None = None,
        is_forum: bool = False,
    ) -> dict[str, Any]:
        """The chat's JSON, created on first mention (type from the id's sign when not given)."""
        known = self.chats.get(chat_id)
        if known is not None and (chat_type is None or known["type"] == chat_type):
            if is_forum and not known.get("is_forum"):
                known["is_forum"] = True
            return known
        if chat_type is None:
            chat_type = "private" if isinstance(chat_id, int) and chat_id > 0 else "supergroup"
        numeric = chat_id if isinstance(chat_id, int) else 0
        created = chat_object(numeric, chat_type, title=title, sender=sender, is_forum=is_forum)
        created["id"] = chat_id
        self.chats[chat_id] = created
        return created

    def known_chat(self, chat_id: ChatId) -> dict[str, Any] | None:
        """The chat if the bot may write to it: any chat, unless ``strict_chats``."""
        if chat_id in self.chats or not self.strict_chats:
            return self.chat(chat_id)
        return None

    def next_message_id(self, chat_id: ChatId) -> int:
        """Allocate the chat's next message id (1, 2, 3, … per chat)."""
        message_id = self._last_message_id.get(chat_id, 0) + 1
        self._last_message_id[chat_id] = message_id
        return message_id

    def remember(self, message: dict[str, Any]) -> None:
        """Keep a message so replies, edits and button presses can refer to it."""
        self.messages[(message["chat"]["id"], message["message_id"])] = message

    def message(self, chat_id: ChatId, message_id: int) -> dict[str, Any] | None:
        """A message by id, or ``None`` when the chat has none such."""
        return self.messages.get((chat_id, message_id))

    def open_callback_query(self, query_id: str) -> None:
        """A button press awaits ``answerCallbackQuery``."""
        self._callback_queries[query_id] = False

    def answer_callback_query(self, query_id: str) -> bool:
        """Mark a press answered; ``False`` if no such press is open (Telegram: "query too old")."""
        if self._callback_queries.get(query_id) is not False:
            return False
        self._callback_queries[query_id] = True
        return True


class UpdateQueue:
    """Updates in order, kept until confirmed by ``offset`` (the Bot API's getUpdates rules)."""

    def __init__(self, first_update_id: int = 1) -> None:
        self._next_id = first_update_id
        self._pending: deque[dict[str, Any]] = deque()

    def push(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Append ``{"update_id": n, kind: payload}`` and return it."""
        update = {"update_id": self._next_id, kind: payload}
        self._next_id += 1
        self._pending.append(update)
        return update

    @property
    def next_update_id(self) -> int:
        """The id the next pushed update will get."""
        return self._next_id

    def pending(self) -> list[dict[str, Any]]:
        """Updates not confirmed yet (delivered or not)."""
        return list(self._pending)

    def confirm(self, offset: int | None) -> None:
        """Forget updates below ``offset``; a negative offset keeps only the last ``-offset``."""
        if offset is None or offset == 0:
            return
        if offset < 0:
            while len(self._pending) > -offset:
                self._pending.popleft()
            return
        while self._pending and self._pending[0]["update_id"] < offset:
            self._pending.popleft()

    def available(self, limit: int, allowed: frozenset[str] | None) -> list[dict[str, Any]]:
        """The first ``limit`` pending updates of an allowed kind (all kinds when ``None``)."""
        found: list[dict[str, Any]] = []
        for update in self._pending:
            if allowed is not None and not allowed.intersection(update):
                continue
            found.append(update)
            if len(found) >= limit:
                break
        return found

    def drop_all(self) -> int:
        """Forget every pending update (``deleteWebhook(drop_pending_updates=True)``)."""
        count = len(self._pending)
        self._pending.clear()
        return count
