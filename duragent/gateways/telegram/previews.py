"""Replies shown on Telegram as they are written: the port's ``PreviewPort`` half.

``frontkit.preview`` decides when a preview is sent, edited and finished; this is how, on
Telegram (a mixin of ``TelegramOutbound``, whose bot, outbox and sends it uses):

- **Pace.** Telegram takes about one message a second in a chat, 20 a minute in a group and
  30 a second overall, and counts edits as it counts sends (so does PTB's rate limiter, which
  paces every call with a ``chat_id``). A preview in a private chat is edited at most every
  ``DM_EVERY`` seconds, in a group every ``GROUP_EVERY`` (15 a minute, leaving the group's
  other messages room), and the gateway's streamed replies together (previews, edits and
  final texts, the final texts first) make at most ``PREVIEW_RATE`` calls a second, below
  Telegram's overall limit.
- **Plain text**, cut to one message (4,096 UTF-16 units, the last one an ellipsis): no parse
  mode, so a half-written reply never fails to parse. Past that length the preview stays as
  it is until the reply is final.
- **Final in place.** The reply is rendered and split as ``send_text`` does; the first chunk
  is edited into the preview (HTML, or plain when Telegram refuses its entities; "message is
  not modified" means it already reads so), the others are sent after it, each waiting out
  refusals in the chat's ``Outbox`` line. ``Delivery`` hands over a reply's first chunk
  alone (a ``RenderedPiece``, its one chunk) and sends the others itself. A preview someone
  deleted, or too old to edit, is replaced by a new message.
- **Deleting** a preview that is already gone is done; one Telegram will not delete (older
  than 48 hours in a group) is left as it is, logged.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from telegram import Bot
from telegram.constants import ParseMode
from telegram.error import BadRequest

from duragent.frontkit import ChatRef, SentMessage
from duragent.frontkit.outbox import Outbox
from duragent.gateways.telegram.html_split import RenderedChunk
from duragent.gateways.telegram.render import message_chunks
from duragent.gateways.telegram.telegram_html import TELEGRAM_TEXT_LIMIT, prefix_end, utf16_len

__all__ = ["DM_EVERY", "GROUP_EVERY", "PREVIEW_RATE", "TelegramPreviews"]

log = logging.getLogger(__name__)

T = TypeVar("T")

DM_EVERY = 1.2
"""Seconds between two edits of a preview in a private chat."""
GROUP_EVERY = 3.5
"""Seconds between two edits of a preview in a group (Telegram: 20 messages a minute)."""
PREVIEW_RATE = 25.0
"""Calls a second of streamed replies (previews, edits, final texts) over every chat
(Telegram: about 30 messages a second; the rest is for approvals, notices, whole replies)."""

_GONE = ("message to edit not found", "message can't be edited", "message_id_invalid")


def _says(exc: BadRequest, *phrases: str) -> bool:
    message = exc.message.lower()
    return any(phrase in message for phrase in phrases)


class TelegramPreviews:
    """``PreviewPort`` for ``TelegramOutbound`` (see module docstring)."""

    preview_rate = PREVIEW_RATE
    _bot: Bot
    outbox: Outbox

    if TYPE_CHECKING:  # ``TelegramOutbound``'s own

        @staticmethod
        async def _busy(call: Awaitable[T]) -> T: ...

        async def _retrying(self, call: Callable[[], Awaitable[T]]) -> T: ...

        async def _send_chunk(
            self, chat: ChatRef, html: str, plain: str, quote: str | None
        ) -> int: ...

    def preview_every(self, chat: ChatRef) -> float:
        """``GROUP_EVERY`` in a group (a negative chat id), ``DM_EVERY`` in a private chat."""
        return GROUP_EVERY if chat.chat_id.startswith("-") else DM_EVERY

    def preview_text(self, text: str) -> str:
        """``text`` stripped, cut to one message with an ellipsis."""
        shown = text.strip()
        if len(shown) * 2 <= TELEGRAM_TEXT_LIMIT or utf16_len(shown) <= TELEGRAM_TEXT_LIMIT:
            return shown
        return shown[: prefix_end(shown, 0, TELEGRAM_TEXT_LIMIT - 1)] + "…"

    async def send_preview(
        self, chat: ChatRef, text: str, *, reply_to: str | None = None
    ) -> SentMessage:
        """The preview, plain, as a reply to ``reply_to`` in a group (as replies quote)."""
        quote = reply_to if reply_to and chat.chat_id.startswith("-") else None
        params = {
            "chat_id": chat.chat_id,
            "text": self.preview_text(text),
            "reply_parameters": (
                {"message_id": int(quote), "allow_sending_without_reply": True} if quote else None
            ),
        }
        sent = await self._busy(self._bot._post("sendMessage", params))
        assert isinstance(sent, dict)
        return SentMessage(chat, str(sent["message_id"]))

    async def edit_preview(self, message: SentMessage, text: str) -> None:
        """The preview's new text, plain (tried once: a refusal only slows the preview)."""
        try:
            await self._busy(self._edit_text(message, self.preview_text(text), None))
        except BadRequest as exc:
            if not _says(exc, "not modified"):
                raise

    async def finish_preview(
        self, message: SentMessage, text: str, *, reply_to: str | None = None
    ) -> SentMessage:
        """The reply in the preview's place, then its other chunks (see module docstring)."""
        chat = message.chat
        quote = reply_to if reply_to and chat.chat_id.startswith("-") else None
        chunks = message_chunks(text)
        if not chunks:
            raise ValueError("finish_preview was given a reply with nothing to show")
        async with self.outbox.lane(chat) as handed:
            first = functools.partial(self._in_place, message, chunks[0], quote)
            last = await self.outbox.persist(chat, first, since=handed)
            for chunk in chunks[1:]:  # a chunk waits out a refusal; the ones sent stay sent
                send = functools.partial(self._send_chunk, chat, chunk.html, chunk.plain, None)
                last = await self.outbox.persist(chat, send, since=handed)
        return SentMessage(chat, str(last))

    async def _in_place(self, message: SentMessage, chunk: RenderedChunk, quote: str | None) -> int:
        """Edit ``chunk`` into the preview (or send it, when the preview is gone); its id."""
        try:
            await self._busy(self._edit_formatted(message, chunk))
            return int(message.message_id)
        except BadRequest as exc:
            if not _says(exc, *_GONE):
                raise
            log.info(
                "telegram: preview %s in %s is gone (%s); the reply is sent as a new message",
                message.message_id,
                message.chat.target,
                exc.message,
            )
        return await self._send_chunk(message.chat, chunk.html, chunk.plain, quote)

    async def _edit_formatted(self, message: SentMessage, chunk: RenderedChunk) -> None:
        try:
            await self._retrying(lambda: self._edit_text(message, chunk.html, ParseMode.HTML))
        except BadRequest as exc:
            if _says(exc, "not modified"):
                return
            if not _says(exc, "can't parse entities", "can't find end"):
                raise
            log.info("telegram refused a reply's formatting in %s; plain", message.chat.target)
            try:
                await self._retrying(lambda: self._edit_text(message, chunk.plain, None))
            except BadRequest as again:
                if not _says(again, "not modified"):
                    raise

    async def _edit_text(self, message: SentMessage, text: str, parse_mode: str | None) -> None:
        params = {
            "chat_id": message.chat.chat_id,
            "message_id": int(message.message_id),
            "text": text,
            "parse_mode": parse_mode,
        }
        await self._bot._post("editMessageText", params)

    async def delete_message(self, message: SentMessage) -> None:
        """Delete a message the bot sent (see module docstring for what is not an error)."""
        params = {"chat_id": message.chat.chat_id, "message_id": int(message.message_id)}
        try:
            await self._busy(self._retrying(lambda: self._bot._post("deleteMessage", params)))
        except BadRequest as exc:
            if not _says(exc, "not found"):
                log.info(
                    "telegram: message %s in %s left as it is: %s",
                    message.message_id,
                    message.chat.target,
                    exc.message,
                )
