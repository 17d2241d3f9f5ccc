"""``DiscordOutbound``: the kit's ``OutboundPort`` over a discord.py ``Client``.

What Discord needs that the kit does not know about:

- **Length.** Discord renders the model's Markdown itself; a reply longer than 2,000
  characters is sent as several messages, never cut inside a code block (``split``).
  ``pieces`` gives the kit those messages: each fits one, so ``send_text`` sends it as it is
  and a reply can go out, and be recorded, message by message (``frontkit.reply_parts``).
- **Replies.** The first message of a reply answers the message that triggered it (a Discord
  reply, allowed to go out if that message was deleted meanwhile). The model's text never
  pings anyone (``@everyone``, roles and users it writes stay text); only the person being
  answered is pinged, as a reply does.
- **Channels by id.** A chat is addressed by its channel id alone
  (``Client.get_partial_messageable``): no lookup, so a DM recovered after a restart, whose
  channel discord.py has not seen yet, is answered like any other.
- **Rate limits** are discord.py's: it reads Discord's rate-limit headers, waits out a 429 and
  retries. What it finally gives up on (a 429 after its tries, a 5xx, the network) is
  ``PlatformBusyError`` to the kit's ``Outbox``, which waits it out in the chat's line,
  message by message (those already sent are not sent again), until
  ``gateways.discord.delivery_retry_seconds`` have passed.
- **Each message posted once.** A connection lost after Discord posted a message leaves the
  bot unable to tell, so the outbox posts again; every try of one message carries the same
  ``nonce`` (Discord's ``enforce_nonce``: a repeated nonce returns the first message and
  posts none), where discord.py would draw a new one per try.
- **Files** are a message with the file attached (``discord.File``) and the caption as its
  text, in the chat's line like a reply.
- **Previews** of replies being written (``frontkit.preview``): one message, edited at most
  every ``PREVIEW_EVERY`` seconds (the gateway's streamed replies together, previews, edits
  and final texts, ``PREVIEW_RATE`` calls a second, well under Discord's 50 requests a
  second), cut to one message; then the reply in its place, split as ``send_text`` splits it
  (a preview deleted meanwhile: a new message).
- **Approvals** are one message with the kit's three buttons (``ApprovalButton``: the kit's
  payloads as ``custom_id``). A press is answered through the interaction it came with
  (``answer_button``), kept here from the press until it is answered.
"""

from __future__ import annotations

import functools
import inspect
import io
import logging
import secrets
from collections.abc import Awaitable
from typing import Any, TypeVar

import aiohttp
import discord

from duragent.frontkit import ChatRef, OutgoingFile, SentMessage, approval_buttons, approval_prompt
from duragent.frontkit.outbox import DELIVERY_RETRY_SECONDS, Outbox, PlatformBusyError
from duragent.frontkit.under_way import UnderWay
from duragent.gateways.discord.buttons import approval_view
from duragent.gateways.discord.split import DISCORD_TEXT_LIMIT, split_message, text_units

__all__ = ["DiscordOutbound", "approval_text"]

log = logging.getLogger(__name__)

QUIET = discord.AllowedMentions(everyone=False, users=False, roles=False, replied_user=True)
"""What a reply may ping: only the person it answers."""

T = TypeVar("T")

ALREADY_ACKNOWLEDGED = 40060
"""Discord's error code for an interaction answered already."""
PREVIEW_EVERY = 1.2
"""Seconds between two edits of a reply's preview in one channel."""
PREVIEW_RATE = 20.0
"""Calls a second of streamed replies (previews, edits, final texts), over every channel."""


async def _busy_as_such(call: Awaitable[T]) -> T:
    """``call``, with Discord's "not now" answers raised as the kit's ``PlatformBusyError``.

    A 429 discord.py stopped waiting out, a 5xx, a connection lost; a 403 or 404 is a
    refusal waiting cannot fix and is raised as it is.
    """
    try:
        return await call
    except discord.RateLimited as exc:
        raise PlatformBusyError(f"discord: {exc}", exc.retry_after) from exc
    except discord.HTTPException as exc:
        if exc.status == 429 or exc.status >= 500:
            raise PlatformBusyError(f"discord: {exc}") from exc
        raise
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        raise PlatformBusyError(f"discord: {exc!r}") from exc


class DiscordOutbound:
    """Sends to Discord channels through ``client`` (see module docstring)."""

    preview_rate = PREVIEW_RATE

    def __init__(
        self, client: discord.Client, *, delivery_retry_seconds: float = DELIVERY_RETRY_SECONDS
    ) -> None:
        """``delivery_retry_seconds``: how long a refused message is retried (``Outbox``)."""
        self._client = client
        self._presses: dict[str, discord.Interaction[Any]] = {}
        self.outbox = Outbox("discord", self._notice, retry_for=delivery_retry_seconds)
        self.under_way = UnderWay("discord")
        """Calls to Discord in flight: the gateway's stop lets them end before it closes the
        client (``frontkit.under_way``)."""

    async def _busy(self, call: Awaitable[T]) -> T:
        """``call`` counted as under way, "not now" as ``PlatformBusyError``.

        Refused unsent once the gateway is stopping (``frontkit.under_way``).
        """
        if self.under_way.stopping:
            if inspect.iscoroutine(call):
                call.close()
            raise PlatformBusyError("discord: the gateway is stopping")
        with self.under_way.one():
            return await _busy_as_such(call)

    async def _send(
        self,
        channel: discord.PartialMessageable,
        text: str,
        reference: discord.MessageReference | None,
        nonce: int,
    ) -> discord.Message:
        """One message (``nonce``: the same for every try of it), counted as under way.

        "Not now" is ``PlatformBusyError`` (``_busy``).
        """
        return await self._busy(_post(channel, text, reference, nonce))

    def _channel(self, chat: ChatRef) -> discord.PartialMessageable:
        return self._client.get_partial_messageable(int(chat.chat_id))

    def pieces(self, text: str) -> tuple[str, ...]:
        """The messages ``send_text`` sends ``text`` as (``split_message``'s)."""
        return tuple(split_message(text))

    async def send_text(
        self, chat: ChatRef, text: str, *, reply_to: str | None = None
    ) -> SentMessage:
        """Send ``text`` as its ``pieces``, the first replying; the last one sent."""
        channel = self._channel(chat)
        chunks = split_message(text)
        if not chunks:  # the kit skips blank replies before this
            raise ValueError("send_text was given a reply with nothing to show")
        last: discord.Message | None = None
        reference = _reference(chat, reply_to)
        async with self.outbox.lane(chat) as handed:
            for chunk in chunks:  # one waits out a refusal; the ones sent stay sent
                send = functools.partial(self._send, channel, chunk, reference, _nonce())
                last = await self.outbox.persist(chat, send, since=handed)
                reference = None  # only the first message replies
        assert last is not None
        return SentMessage(chat, str(last.id))

    async def send_file(
        self, chat: ChatRef, file: OutgoingFile, *, reply_to: str | None = None
    ) -> SentMessage:
        """One message with the file attached and the caption as its text (cut to one message).

        Every kind is an attachment (Discord shows images, audio and video in place); a file
        over the channel's upload limit is refused (413), which the kit tells the chat.
        """
        channel = self._channel(chat)
        caption = file.caption
        text = split_message(caption)[0] if caption and split_message(caption) else None
        reference = _reference(chat, reply_to)
        nonce = _nonce()

        async def attempt() -> discord.Message:
            upload = discord.File(io.BytesIO(file.data), filename=file.name)  # read by each try
            if reference is None:
                return await self._busy(
                    channel.send(text, file=upload, allowed_mentions=QUIET, nonce=nonce)
                )
            return await self._busy(
                channel.send(
                    text, file=upload, reference=reference, allowed_mentions=QUIET, nonce=nonce
                )
            )

        sent = await self.outbox.send(chat, attempt)
        return SentMessage(chat, str(sent.id))

    async def send_typing(self, chat: ChatRef) -> None:
        """Show "typing…" (Discord shows it for about ten seconds, or until the bot sends)."""
        with self.under_way.one():
            await self._channel(chat).typing()

    async def ask_approval(
        self, chat: ChatRef, *, session_id: str, call_id: str, command: str
    ) -> SentMessage:
        """The approval prompt with its three buttons (one message: the buttons go with it)."""
        channel = self._channel(chat)
        text = approval_text(command)
        nonce = _nonce()
        sent = await self.outbox.send(
            chat,
            lambda: self._busy(
                channel.send(
                    text,
                    view=approval_view(approval_buttons(call_id)),
                    allowed_mentions=QUIET,
                    nonce=nonce,
                )
            ),
        )
        return SentMessage(chat, str(sent.id))

    async def _notice(self, chat: ChatRef, text: str) -> None:
        """The kit's one-time notice that a message was given up (tried once)."""
        with self.under_way.one():
            await self._channel(chat).send(text, allowed_mentions=QUIET)

    async def edit(self, message: SentMessage, text: str) -> None:
        """Replace a message's text and remove its buttons."""
        chunks = split_message(text)
        if not chunks:
            return
        partial = self._channel(message.chat).get_partial_message(int(message.message_id))
        with self.under_way.one():
            await partial.edit(content=chunks[0], view=None, allowed_mentions=QUIET)

    # -- previews of replies being written (``frontkit.preview_port``) ------------------------

    def preview_every(self, chat: ChatRef) -> float:
        """The same in every channel (Discord's limits are per route, not per kind of chat)."""
        return PREVIEW_EVERY

    def preview_text(self, text: str) -> str:
        """``text`` stripped, cut to one message with an ellipsis."""
        shown = text.strip()
        if text_units(shown) <= DISCORD_TEXT_LIMIT:
            return shown
        cut = shown[: DISCORD_TEXT_LIMIT - 1]
        while text_units(cut) > DISCORD_TEXT_LIMIT - 1:
            cut = cut[:-1]
        return cut + "…"

    async def send_preview(
        self, chat: ChatRef, text: str, *, reply_to: str | None = None
    ) -> SentMessage:
        """The preview as a reply to ``reply_to`` (tried once; see ``_lost_on_the_way``)."""
        reference, channel, shown, nonce = (
            _reference(chat, reply_to),
            self._channel(chat),
            self.preview_text(text),
            _nonce(),
        )
        try:
            sent = await self._send(channel, shown, reference, nonce)
        except PlatformBusyError as exc:
            if not _lost_on_the_way(exc):
                raise
            # posted or not, the same nonce is one message: Discord returns it if it was posted
            sent = await self._send(channel, shown, reference, nonce)
        return SentMessage(chat, str(sent.id))

    async def edit_preview(self, message: SentMessage, text: str) -> None:
        """The preview's new text (tried once: a refusal only slows the preview)."""
        partial = self._channel(message.chat).get_partial_message(int(message.message_id))
        await self._busy(partial.edit(content=self.preview_text(text), allowed_mentions=QUIET))

    async def finish_preview(
        self, message: SentMessage, text: str, *, reply_to: str | None = None
    ) -> SentMessage:
        """The reply's first message in the preview's place, the others after it."""
        chat = message.chat
        chunks = split_message(text)
        if not chunks:
            raise ValueError("finish_preview was given a reply with nothing to show")
        channel = self._channel(chat)
        anew = _nonce()

        async def in_place() -> discord.Message | SentMessage:
            partial = channel.get_partial_message(int(message.message_id))
            try:
                await self._busy(partial.edit(content=chunks[0], allowed_mentions=QUIET))
            except discord.NotFound:
                log.info("discord: preview %s is gone; reply sent anew", message.message_id)
                return await self._send(channel, chunks[0], _reference(chat, reply_to), anew)
            return message

        async with self.outbox.lane(chat) as handed:
            last = await self.outbox.persist(chat, in_place, since=handed)
            for chunk in chunks[1:]:  # one waits out a refusal; the ones sent stay sent
                send = functools.partial(self._send, channel, chunk, None, _nonce())
                last = await self.outbox.persist(chat, send, since=handed)
        return last if isinstance(last, SentMessage) else SentMessage(chat, str(last.id))

    async def delete_message(self, message: SentMessage) -> None:
        """Delete a message the bot sent (one already gone is done)."""
        partial = self._channel(message.chat).get_partial_message(int(message.message_id))
        try:
            await self._busy(partial.delete())
        except discord.NotFound:
            return

    def hold(self, interaction: discord.Interaction[Any]) -> str:
        """Keep a press's interaction until the kit answers it; its ``callback_id``."""
        key = str(interaction.id)
        self._presses[key] = interaction
        return key

    def release(self, callback_id: str) -> None:
        """Forget a press the kit did not answer (it failed before it could)."""
        self._presses.pop(callback_id, None)

    async def answer_button(self, callback_id: str, text: str | None = None) -> None:
        """Answer a press: a message only the presser sees with ``text``, else a silent ack."""
        interaction = self._presses.pop(callback_id, None)
        if interaction is None:
            log.info("discord: press %s was already answered or expired", callback_id)
            return
        try:
            with self.under_way.one():
                if text:
                    await interaction.response.send_message(text, ephemeral=True)
                else:
                    await interaction.response.defer()
        except discord.HTTPException as exc:
            if exc.code != ALREADY_ACKNOWLEDGED:
                raise
            # each node gets the press: another node's copy answered it first
            log.info("discord: press %s was answered already: %s", callback_id, exc.text)


async def _post(
    channel: discord.PartialMessageable,
    text: str,
    reference: discord.MessageReference | None,
    nonce: int,
) -> discord.Message:
    """One message (``nonce``: the same for every try of it)."""
    if reference is None:
        return await channel.send(text, allowed_mentions=QUIET, nonce=nonce)
    return await channel.send(text, reference=reference, allowed_mentions=QUIET, nonce=nonce)


def _lost_on_the_way(exc: PlatformBusyError) -> bool:
    """Whether a call's answer was lost with its connection (it may have taken effect).

    A preview is tried once, but a post whose answer was lost is posted again at once with
    its nonce: else a second preview would follow a first nobody knows of, left half-written.
    """
    return isinstance(exc.__cause__, aiohttp.ClientError | OSError | TimeoutError)


def _nonce() -> int:
    """A message's nonce: random, under Discord's 25 characters, kept for all its tries."""
    return secrets.randbits(63)


def _reference(chat: ChatRef, reply_to: str | None) -> discord.MessageReference | None:
    if not reply_to or not reply_to.isdigit():
        return None
    return discord.MessageReference(
        message_id=int(reply_to), channel_id=int(chat.chat_id), fail_if_not_exists=False
    )


def approval_text(command: str, limit: int = DISCORD_TEXT_LIMIT) -> str:
    """The kit's prompt (the command in a code block), the command cut to fit one message."""
    prompt = approval_prompt(command)
    if text_units(prompt) <= limit:
        return prompt
    marker = "\n… [command cut here: {} more characters not shown]"
    room = limit - text_units(approval_prompt("")) - text_units(marker.format(len(command)))
    kept = command[:room]
    while text_units(kept) > room:
        kept = kept[:-1]
    return approval_prompt(kept) + marker.format(len(command) - len(kept))
