"""``DiscordOutbound``: the kit's ``OutboundPort`` over a discord.py ``Client``.

What Discord needs that the kit does not know about:

- **Length.** Discord renders the model's Markdown itself; a reply longer than 2,000
  characters is sent as several messages, never cut inside a code block (``split``).
- **Replies.** The first message of a reply answers the message that triggered it (a Discord
  reply, allowed to go out if that message was deleted meanwhile). The model's text never
  pings anyone (``@everyone``, roles and users it writes stay text); only the person being
  answered is pinged, as a reply does.
- **Channels by id.** A chat is addressed by its channel id alone
  (``Client.get_partial_messageable``): no lookup, so a DM recovered after a restart, whose
  channel discord.py has not seen yet, is answered like any other.
- **Rate limits** are discord.py's: it reads Discord's rate-limit headers, waits out a 429 and
  retries; nothing here paces or retries on top of it.
- **Approvals** are one message with the kit's three buttons (``ApprovalButton``: the kit's
  payloads as ``custom_id``). A press is answered through the interaction it came with
  (``answer_button``), kept here from the press until it is answered.
"""

from __future__ import annotations

import logging
from typing import Any

import discord

from duragent.frontkit import ChatRef, SentMessage, approval_buttons, approval_prompt
from duragent.gateways.discord.buttons import approval_view
from duragent.gateways.discord.split import DISCORD_TEXT_LIMIT, split_message, text_units

__all__ = ["DiscordOutbound", "approval_text"]

log = logging.getLogger(__name__)

QUIET = discord.AllowedMentions(everyone=False, users=False, roles=False, replied_user=True)
"""What a reply may ping: only the person it answers."""


class DiscordOutbound:
    """Sends to Discord channels through ``client`` (see module docstring)."""

    def __init__(self, client: discord.Client) -> None:
        self._client = client
        self._presses: dict[str, discord.Interaction[Any]] = {}

    def _channel(self, chat: ChatRef) -> discord.PartialMessageable:
        return self._client.get_partial_messageable(int(chat.chat_id))

    async def send_text(
        self, chat: ChatRef, text: str, *, reply_to: str | None = None
    ) -> SentMessage:
        """Send ``text`` as one or more messages; the last one sent."""
        channel = self._channel(chat)
        chunks = split_message(text)
        if not chunks:  # the kit skips blank replies before this
            raise ValueError("send_text was given a reply with nothing to show")
        last: discord.Message | None = None
        reference = _reference(chat, reply_to)
        for chunk in chunks:
            if reference is None:
                last = await channel.send(chunk, allowed_mentions=QUIET)
            else:
                last = await channel.send(chunk, reference=reference, allowed_mentions=QUIET)
            reference = None  # only the first message replies
        assert last is not None
        return SentMessage(chat, str(last.id))

    async def send_typing(self, chat: ChatRef) -> None:
        """Show "typing…" (Discord shows it for about ten seconds, or until the bot sends)."""
        await self._channel(chat).typing()

    async def ask_approval(
        self, chat: ChatRef, *, session_id: str, call_id: str, command: str
    ) -> SentMessage:
        """The approval prompt with its three buttons (one message: the buttons go with it)."""
        sent = await self._channel(chat).send(
            approval_text(command),
            view=approval_view(approval_buttons(call_id)),
            allowed_mentions=QUIET,
        )
        return SentMessage(chat, str(sent.id))

    async def edit(self, message: SentMessage, text: str) -> None:
        """Replace a message's text and remove its buttons."""
        chunks = split_message(text)
        if not chunks:
            return
        partial = self._channel(message.chat).get_partial_message(int(message.message_id))
        await partial.edit(content=chunks[0], view=None, allowed_mentions=QUIET)

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
        if text:
            await interaction.response.send_message(text, ephemeral=True)
        else:
            await interaction.response.defer()


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
