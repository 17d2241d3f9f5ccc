"""``TelegramOutbound``: the kit's ``OutboundPort`` over python-telegram-bot's ``Bot``.

What Telegram needs that the kit does not know about:

- **Formatting.** Replies are Markdown; Telegram takes a subset of HTML. Each reply is rendered
  and split into chunks of at most 4,096 visible characters, never inside a tag or a code
  block (``render``). When Telegram still refuses a chunk's HTML ("can't parse entities"),
  that chunk is sent again as plain text, so a reply is never lost to a formatting slip.
  ``pieces`` gives the kit those chunks (``RenderedPiece``: the chunk's HTML), and
  ``send_text`` sends one as the chunk it is, so a reply can go out, and be recorded, chunk
  by chunk (``frontkit.reply_parts``).
- **Replies in groups.** In a group the first chunk answers the message that triggered it
  (``reply_parameters``, allowed to go out even if that message was deleted); in a DM the
  conversation is the thread, so no quote. Telegram ids tell the two apart: a user's chat id
  is positive, a group's or channel's negative.
- **Flood control** is the bot's rate limiter (``AIORateLimiter``, configured by the service):
  it paces sends within Telegram's limits and, on a 429, waits the ``retry_after`` Telegram
  names before trying again (holding every send meanwhile). Network failures and Telegram's
  5xx answers are retried here a few times with a growing pause. What still fails that way
  (a 429 past the limiter's retries, a longer outage) is ``PlatformBusyError`` to the kit's
  ``Outbox``, which waits it out in the chat's line, chunk by chunk (the chunks already sent
  are not sent again), until ``gateways.telegram.delivery_retry_seconds`` have passed; a
  send that timed out may have arrived, so a retry can repeat one chunk — the kit's delivery
  guarantee is "at least once per crash" for the same reason.
- **Files** go with their kind's method (``sendPhoto``, ``sendDocument``, ``sendVoice``,
  ``sendAudio``, ``sendVideo``) as a multipart upload, in the chat's line like a reply: a
  kind Telegram refuses for the file is sent as a document instead.
- **Previews** of replies being written (``frontkit.preview``): sent plain, edited, then
  finished in place with the formatted reply (``previews``, a mixin of this class).
- **Approvals** are one message with the kit's three inline buttons (``approval_buttons``:
  labels and payloads the kit reads back when one is pressed).
- **Raw sends.** ``sendMessage`` and ``sendChatAction`` go through ``Bot._post`` (``_call``),
  the step every PTB method takes, with the Bot API's own parameter names: the request layer,
  the rate limiter (``ExtBot._do_post``) and PTB's errors (``RetryAfter``, ``BadRequest``,
  ``Forbidden``, ``TimedOut``…) are all as for ``Bot.send_message``, but the answer stays the
  Bot API's dict instead of being rebuilt as a ``Message`` (a third of a send's CPU, issue
  35), of which only ``message_id`` is read. ``Bot.do_api_request`` would do the same but
  warns (an error under pytest) on every call to a method PTB has a typed form of.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import warnings
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, InputFile
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, NetworkError, RetryAfter

from duragent.core.attachments import AttachmentKind
from duragent.frontkit import ChatRef, OutgoingFile, SentMessage, approval_buttons
from duragent.frontkit.outbox import DELIVERY_RETRY_SECONDS, Outbox, PlatformBusyError
from duragent.gateways.telegram.previews import TelegramPreviews
from duragent.gateways.telegram.render import (
    RenderedPiece,
    message_chunks,
    render_approval_prompt,
    render_chunks,
)

__all__ = ["TelegramOutbound"]

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_TYPING_IN_FLIGHT = 16
""""typing…" requests at once; beyond that a chat's indicator is skipped (renewed 4 s later)."""

RETRY_PAUSES = (0.5, 1.0, 2.0)
"""Pauses before each retry of a send that failed on the network or with a 5xx."""

MEDIA_METHODS = {
    AttachmentKind.IMAGE: ("sendPhoto", "photo"),
    AttachmentKind.DOCUMENT: ("sendDocument", "document"),
    AttachmentKind.VOICE: ("sendVoice", "voice"),
    AttachmentKind.AUDIO: ("sendAudio", "audio"),
    AttachmentKind.VIDEO: ("sendVideo", "video"),
}
"""Each kind of file → the Bot API method that sends it and the parameter holding the file."""
MAX_CAPTION = 1024
"""Characters a caption may hold (a longer one is cut, marked with an ellipsis)."""
UPLOAD_SECONDS = 120.0
"""How long an upload and Telegram's answer to it may take (a file is up to 50 MB)."""


def _is_group(chat: ChatRef) -> bool:
    return chat.chat_id.startswith("-")


def _retry_after_seconds(exc: RetryAfter) -> float:
    """The wait Telegram named (PTB warns on reading it as a number; either form is fine)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


async def _busy_as_such(call: Awaitable[T]) -> T:
    """``call``, with Telegram's "not now" answers raised as the kit's ``PlatformBusyError``.

    A 429 (past the rate limiter's own retries), a 5xx or a network failure (past
    ``_retrying``'s); a ``BadRequest`` (also a ``NetworkError`` in PTB) is a refusal of the
    message itself and is raised as it is.
    """
    try:
        return await call
    except RetryAfter as exc:
        raise PlatformBusyError(f"telegram: {exc}", _retry_after_seconds(exc)) from exc
    except BadRequest:
        raise
    except NetworkError as exc:
        raise PlatformBusyError(f"telegram: {exc.message}") from exc


async def _call(bot: Bot, method: str, params: dict[str, Any]) -> Any:
    """The Bot API's answer to ``method`` as PTB's request layer returns it (a dict or a bool).

    ``params`` are the Bot API's names; ``None`` values are left out (as PTB's methods do);
    ``TelegramObject`` values are sent as their JSON.
    """
    return await bot._post(method, params)


def _too_large(exc: NetworkError) -> bool:
    """Telegram's 413 ("Request Entity Too Large"), or its "file is too big"."""
    message = exc.message.lower()
    return "too large" in message or "too big" in message


def _entities_refused(exc: BadRequest) -> bool:
    return "can't parse entities" in exc.message.lower() or "can't find end" in exc.message.lower()


class TelegramOutbound(TelegramPreviews):
    """Sends to Telegram chats through ``bot`` (see module docstring)."""

    _busy = staticmethod(_busy_as_such)

    def __init__(
        self,
        bot: Bot,
        *,
        typing_bot: Bot | None = None,
        retry_pauses: tuple[float, ...] = RETRY_PAUSES,
        delivery_retry_seconds: float = DELIVERY_RETRY_SECONDS,
    ) -> None:
        """A port over ``bot``.

        ``typing_bot``: a bot without the rate limiter, for "typing…" (not a message);
        ``delivery_retry_seconds``: how long a refused message is retried (``Outbox``).
        """
        self._bot = bot
        self._typing_bot = typing_bot or bot
        self._typing_in_flight = 0
        self._pauses = retry_pauses
        self.outbox = Outbox("telegram", self._notice, retry_for=delivery_retry_seconds)

    def pieces(self, text: str) -> tuple[str, ...]:
        """The chunks ``send_text`` sends ``text`` as, each its HTML (``RenderedPiece``)."""
        return tuple(RenderedPiece(chunk) for chunk in message_chunks(text))

    async def send_text(
        self, chat: ChatRef, text: str, *, reply_to: str | None = None
    ) -> SentMessage:
        """Send ``text`` (Markdown, or one of its ``pieces``) as its chunks; the last one sent."""
        quote = reply_to if reply_to and _is_group(chat) else None
        last: int | None = None
        chunks = message_chunks(text)
        async with self.outbox.lane(chat) as handed:
            for chunk in chunks:  # a chunk waits out a refusal; the ones sent stay sent
                send = functools.partial(self._send_chunk, chat, chunk.html, chunk.plain, quote)
                last = await self.outbox.persist(chat, send, since=handed)
                quote = None  # only the first chunk quotes
        if last is None:  # nothing visible to send: the kit skips blank replies before this
            raise ValueError("send_text was given a reply with nothing to show")
        return SentMessage(chat, str(last))

    async def _send_chunk(
        self,
        chat: ChatRef,
        html: str,
        plain: str,
        quote: str | None,
        markup: InlineKeyboardMarkup | None = None,
    ) -> int:
        """The id of the message sent (``quote``: the message it replies to)."""
        reply = {"message_id": int(quote), "allow_sending_without_reply": True} if quote else None
        return await _busy_as_such(self._send_formatted(chat, html, plain, reply, markup))

    async def _send_formatted(
        self,
        chat: ChatRef,
        html: str,
        plain: str,
        reply: dict[str, Any] | None,
        markup: InlineKeyboardMarkup | None,
    ) -> int:
        try:
            return await self._retrying(
                lambda: self._send_message(chat, html, ParseMode.HTML, reply, markup)
            )
        except BadRequest as exc:
            if not _entities_refused(exc):
                raise
            log.info(
                "telegram refused the formatting of a reply in %s; sent as plain text", chat.target
            )
            return await self._retrying(
                lambda: self._send_message(chat, plain, None, reply, markup)
            )

    async def _send_message(
        self,
        chat: ChatRef,
        text: str,
        parse_mode: str | None,
        reply: dict[str, Any] | None,
        markup: InlineKeyboardMarkup | None = None,
    ) -> int:
        """``sendMessage`` with what ``Bot.send_message`` would send; the new message's id."""
        params = {
            "chat_id": chat.chat_id,
            "text": text,
            "parse_mode": parse_mode,
            "reply_parameters": reply,
            "reply_markup": markup,
        }
        sent = await _call(self._bot, "sendMessage", params)
        return int(sent["message_id"])

    async def send_typing(self, chat: ChatRef) -> None:
        """Show "typing…" (Telegram shows it for about five seconds)."""
        if self._typing_in_flight >= MAX_TYPING_IN_FLIGHT:
            return  # a courtesy: under a burst, replies matter more than "typing…"
        self._typing_in_flight += 1
        try:
            await _call(
                self._typing_bot,
                "sendChatAction",
                {"chat_id": chat.chat_id, "action": ChatAction.TYPING},
            )
        finally:
            self._typing_in_flight -= 1

    async def ask_approval(
        self, chat: ChatRef, *, session_id: str, call_id: str, command: str
    ) -> SentMessage:
        """The approval prompt with its three buttons."""
        buttons = approval_buttons(call_id)
        keyboard = InlineKeyboardMarkup(
            [[InlineKeyboardButton(b.label, callback_data=b.data) for b in buttons]]
        )
        prompt = render_approval_prompt(command)
        sent = await self.outbox.send(
            chat, lambda: self._send_chunk(chat, prompt.html, prompt.plain, None, keyboard)
        )
        return SentMessage(chat, str(sent))

    async def send_file(
        self, chat: ChatRef, file: OutgoingFile, *, reply_to: str | None = None
    ) -> SentMessage:
        """Upload a file with its kind's method (``MEDIA_METHODS``), in the chat's line.

        The caption goes as plain text (cut at ``MAX_CAPTION``). A photo, voice note, audio
        or video Telegram refuses as such (an image it cannot process, a person whose privacy
        settings refuse voice messages) is sent again as a document.
        """
        quote = reply_to if reply_to and _is_group(chat) else None
        kind, name, caption = file.kind, file.name, file.caption
        if caption and len(caption) > MAX_CAPTION:
            caption = caption[: MAX_CAPTION - 1] + "…"
        upload = functools.partial(self._upload, chat, file.data, name, file.mime, caption, quote)

        async def attempt() -> int:
            try:
                return await _busy_as_such(upload(kind))
            except BadRequest as exc:
                if kind is AttachmentKind.DOCUMENT or _too_large(exc):
                    raise
                log.info("telegram refused %s as %s (%s); sent as a document", name, kind, exc)
                return await _busy_as_such(upload(AttachmentKind.DOCUMENT))

        return SentMessage(chat, str(await self.outbox.send(chat, attempt)))

    async def _upload(
        self,
        chat: ChatRef,
        data: bytes,
        name: str,
        mime: str,
        caption: str | None,
        quote: str | None,
        kind: AttachmentKind,
    ) -> int:
        """One ``sendPhoto``/``sendDocument``/… of ``data`` (multipart); the message's id."""
        method, field = MEDIA_METHODS[kind]
        upload = InputFile(data, filename=name)
        upload.mimetype = mime
        reply = {"message_id": int(quote), "allow_sending_without_reply": True} if quote else None
        params = {"chat_id": chat.chat_id, field: upload, "caption": caption}
        params["reply_parameters"] = reply

        async def post() -> Any:
            try:
                return await self._bot._post(
                    method, params, read_timeout=UPLOAD_SECONDS, write_timeout=UPLOAD_SECONDS
                )
            except NetworkError as exc:  # a 413 is one: no retry can make the file smaller
                if isinstance(exc, BadRequest) or not _too_large(exc):
                    raise
                raise BadRequest(exc.message) from exc

        sent = await self._retrying(post)
        return int(sent["message_id"])

    async def _notice(self, chat: ChatRef, text: str) -> None:
        """The kit's one-time notice that a message was given up (plain text, tried once)."""
        await self._send_message(chat, text, None, None)

    async def edit(self, message: SentMessage, text: str) -> None:
        """Replace a message's text (and remove its buttons)."""
        chunks = render_chunks(text)
        if not chunks:
            return
        chunk = chunks[0]
        try:
            await self._retrying(
                lambda: self._bot.edit_message_text(
                    chunk.html,
                    chat_id=message.chat.chat_id,
                    message_id=int(message.message_id),
                    parse_mode=ParseMode.HTML,
                )
            )
        except BadRequest as exc:
            if "not modified" in exc.message.lower():
                return
            if not _entities_refused(exc):
                raise
            await self._bot.edit_message_text(
                chunk.plain, chat_id=message.chat.chat_id, message_id=int(message.message_id)
            )

    async def answer_button(self, callback_id: str, text: str | None = None) -> None:
        """Answer a button press (a toast with ``text``, if given).

        The answer is cosmetic (it ends the button's spinner). Telegram refuses a second
        answer, or one after about 15 s, with "query is too old": a press redelivered after a
        restart is such a press. That refusal is logged, not raised, so the press is still
        handled and the chat's later updates are not held behind it.
        """
        try:
            await self._retrying(lambda: self._bot.answer_callback_query(callback_id, text=text))
        except BadRequest as exc:
            if "query is too old" not in exc.message.lower():
                raise
            log.info("telegram: button press %s not answered: %s", callback_id, exc.message)

    async def _retrying(self, call: Callable[[], Awaitable[T]]) -> T:
        """``call()``, retried after network failures and 5xx answers (never a 4xx)."""
        for pause in self._pauses:
            try:
                return await call()
            except BadRequest:
                raise
            except NetworkError as exc:
                log.info("telegram call failed (%s); retrying in %.1fs", exc.message, pause)
                await asyncio.sleep(pause)
        return await call()
