"""What the bot did to a chat beyond plain sends, as a test asks it of ``FakeTelegram``.

A mixin of ``FakeTelegram`` (its state is the fake's, read under the fake's lock): the files
the bot sent (``_telegram_outbound_media``), its text edits, drafts and deletions
(``_telegram_edits``) and its command menus (``_telegram_commands``), and the text of a
message as the user sees it now. ``sent_messages`` stays what it was: the texts as first sent,
so a test of a streamed reply reads the end state with ``message_text`` or ``final_texts``::

    preview = await bot.send_message(42, "Hel")
    await bot.edit_message_text("Hello!", chat_id=42, message_id=preview.message_id)
    assert tg.sent_messages(42) == ["Hel"]
    assert [e.text for e in tg.edits(42)] == ["Hello!"]
    assert tg.final_texts(42) == ["Hello!"]
"""

from __future__ import annotations

import threading
from typing import Any

from duragent.testing._telegram_commands import CommandMenus
from duragent.testing._telegram_edits import ChatChanges, Deletion, DraftUpdate, MessageEdit
from duragent.testing._telegram_files import FileStore
from duragent.testing._telegram_media import MediaKind
from duragent.testing._telegram_outbound_media import OutboundMedia, PhotoSizes, SentFile
from duragent.testing.telegram_methods import BotMethods
from duragent.testing.telegram_store import ChatStore

__all__ = ["TelegramOutboundRecords"]


def _same(a: int | str, b: int | str | None) -> bool:
    return b is None or str(a) == str(b)


class TelegramOutboundRecords:
    """``FakeTelegram``'s records of files, edits, drafts, deletions and menus (a mixin)."""

    _lock: threading.Lock
    _store: ChatStore
    _files: FileStore
    _methods: BotMethods
    bot: dict[str, Any]

    def _install_outbound(self, photo_sizes: PhotoSizes) -> None:
        """Add the methods of this mixin's modules to the fake's table (from ``__init__``)."""
        self._outbound = OutboundMedia(self._methods, self._files, photo_sizes)
        self._changes = ChatChanges(self._methods)
        self._menus = CommandMenus()
        for part in (self._outbound, self._changes, self._menus):
            self._methods.table.update(part.table())

    # -- files --------------------------------------------------------------------------------

    def sent_files(
        self, chat_id: int | str | None = None, kind: MediaKind | None = None
    ) -> list[SentFile]:
        """Files the bot sent (into one chat, of one kind: ``photo``, ``document``…), in order."""
        with self._lock:
            found = list(self._outbound.sent)
        return [f for f in found if _same(f.chat_id, chat_id) and kind in (None, f.kind)]

    # -- edits, drafts, deletions -------------------------------------------------------------

    def edits(
        self, chat_id: int | str | None = None, message_id: int | None = None
    ) -> list[MessageEdit]:
        """Accepted ``editMessageText`` calls (of one chat, one message), in order."""
        with self._lock:
            found = list(self._changes.edits)
        return [
            e for e in found if _same(e.chat_id, chat_id) and message_id in (None, e.message_id)
        ]

    def drafts(
        self, chat_id: int | str | None = None, draft_id: int | None = None
    ) -> list[DraftUpdate]:
        """Accepted ``sendMessageDraft`` calls (of one chat, one draft), in order."""
        with self._lock:
            found = list(self._changes.drafts)
        return [d for d in found if _same(d.chat_id, chat_id) and draft_id in (None, d.draft_id)]

    def deleted(self, chat_id: int | str | None = None) -> list[Deletion]:
        """Accepted ``deleteMessage`` calls (in one chat), in order."""
        with self._lock:
            found = list(self._changes.deletions)
        return [d for d in found if _same(d.chat_id, chat_id)]

    def message_text(self, chat_id: int | str, message_id: int) -> str | None:
        """A message's text (or caption) as the user sees it now; ``None`` if there is none."""
        with self._lock:
            found = self._store.message(_chat_key(chat_id), message_id)
            if found is None:
                return None
            text = found.get("text", found.get("caption"))
            return text if isinstance(text, str) else None

    def final_texts(self, chat_id: int | str) -> list[str]:
        """The texts of the bot's text messages in a chat as they are now, oldest first.

        Edits applied, deleted messages left out: what the user reads when the bot is done.
        """
        key = _chat_key(chat_id)
        with self._lock:
            mine = [
                m
                for (chat, _id), m in self._store.messages.items()
                if chat == key and "text" in m and m.get("from", self.bot)["id"] == self.bot["id"]
            ]
        return [m["text"] for m in sorted(mine, key=lambda m: int(m["message_id"]))]

    # -- the command menu ---------------------------------------------------------------------

    def commands(
        self, scope: dict[str, Any] | None = None, language_code: str = ""
    ) -> list[dict[str, str]]:
        """The menu set for one scope (``{"type": "chat", "chat_id": 42}``…) and language.

        Exactly that scope's (default: ``{"type": "default"}``), ``[]`` when none is set.
        """
        with self._lock:
            return self._menus.menu(scope, language_code)

    def command_menus(self) -> dict[str, list[dict[str, str]]]:
        """Every menu set, by ``"<scope JSON> <language>"`` (``'{"type":"default"} '``)."""
        with self._lock:
            return {k: [dict(c) for c in v] for k, v in self._menus.menus.items()}


def _chat_key(chat_id: int | str) -> int | str:
    """A chat id as the store keys it (numeric text as a number)."""
    if isinstance(chat_id, str) and chat_id.lstrip("-").isdigit():
        return int(chat_id)
    return chat_id
