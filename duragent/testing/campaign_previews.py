"""What a Telegram campaign makes of a streamed reply: the preview is not the answer, its end is.

A reply shown as it is written (``frontkit.preview``) reaches the chat as a **preview**: a
``sendMessage`` in plain text (no parse mode, no buttons), edited in plain text as the reply
grows, then **finished in place**: edited into the formatted reply (``parse_mode`` HTML).
When a kill comes before the reply was written, the next start **deletes** the preview and
the turn runs again. Read as ordinary sends, a preview would count a half-written reply as
the answer, and a deleted preview and the retried turn's reply as an answer twice.

``PreviewsSeen.take`` reads one Bot API call: a preview's send, plain edit or deletion is
``PREVIEW`` (no answer); its first finishing edit is ``FINAL`` (the reply, read as a send of
its text; a finishing edit again after a restart, which Telegram answers "message is not
modified", is the same reply and ``PREVIEW``); anything else is ``None``. Every plain
``sendMessage`` without buttons is taken for a preview: its first text may stop anywhere,
even inside the token that names the message. The kit's one-time notices are plain too;
they are never edited and name no message, so ``left_half`` (what a chat would be left with:
a reply cut off mid-sentence) lists only the previews, never finished nor deleted, that were
edited or that show a token's start (``#q``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from duragent.testing.telegram_calls import RecordedCall

__all__ = ["FINAL", "PREVIEW", "Preview", "PreviewsSeen"]

PREVIEW: Literal["preview"] = "preview"
FINAL: Literal["final"] = "final"


@dataclass
class Preview:
    """One preview message the bot sent, and what became of it."""

    chat_id: int
    message_id: int
    sent_at: float
    text: str
    """What it first showed."""
    edits: int = 0
    """Plain edits as the reply grew."""
    finished_at: float | None = None
    deleted: bool = False


class PreviewsSeen:
    """The previews of one campaign's chats (module docstring)."""

    def __init__(self) -> None:
        self.by_id: dict[tuple[int, int], Preview] = {}

    def take(self, call: RecordedCall) -> Literal["preview", "final"] | None:
        """What ``call`` is to the reading of answers (module docstring)."""
        params = call.params
        if call.method == "sendMessage":
            plain = not params.get("parse_mode") and "reply_markup" not in params
            if not (call.ok and plain):
                return None
            assert call.answer is not None
            chat_id, message_id = int(params["chat_id"]), int(call.answer["result"]["message_id"])
            text = str(params.get("text", ""))
            self.by_id[(chat_id, message_id)] = Preview(chat_id, message_id, call.time, text)
            return PREVIEW
        found = self.by_id.get(_key(params))
        if found is None or call.method not in ("editMessageText", "deleteMessage"):
            return None
        if call.method == "deleteMessage":
            found.deleted = found.deleted or call.ok or _says(call, "not found")
            return PREVIEW
        if not params.get("parse_mode"):
            found.edits += int(call.ok)
            return PREVIEW
        if not (call.ok or _says(call, "not modified")) or found.finished_at is not None:
            return PREVIEW
        found.finished_at = call.time
        return FINAL

    def left_half(self) -> list[Preview]:
        """The previews neither finished in place nor deleted (not the notices)."""
        return [
            p
            for p in self.by_id.values()
            if p.finished_at is None and not p.deleted and (p.edits or "#q" in p.text)
        ]

    def summary(self) -> str:
        """A report row: previews / finished in place / deleted / left half."""
        half = self.left_half()
        every = [p for p in self.by_id.values() if p.finished_at or p.deleted or p in half]
        finished = sum(1 for p in every if p.finished_at is not None)
        deleted = sum(1 for p in every if p.deleted)
        return f"{len(every)} / {finished} / {deleted} / {len(half)}"


def _key(params: dict[str, object]) -> tuple[int, int]:
    try:
        return int(str(params.get("chat_id"))), int(str(params.get("message_id")))
    except ValueError:
        return 0, 0


def _says(call: RecordedCall, *phrases: str) -> bool:
    said = str((call.answer or {}).get("description", "")).lower()
    return any(phrase in said for phrase in phrases)
