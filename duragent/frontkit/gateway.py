"""``ChatFront``: the platform-neutral pipeline every chat adapter hands its updates to.

An adapter (Telegram, Discord, a plugin) translates an update into an ``InboundMessage`` or a
``ButtonPress`` and calls ``message`` or ``press``. Everything else is decided here, once, in
this order (spec ``202611240305.chat-gateway-core``):

1. **route** (``Router``): no agent → dropped, one log line (fail closed);
2. **access gate** (``spec.access``: DM / group policy): refused → dropped, one log line; a
   blocked group sender likewise; under ``dm.policy: pairing`` a refused DM sender is given
   a pairing code instead (``pairing_chat``), and nothing of the message is kept; then the
   sender's **rate** (``rates``: ``messages_per_sender_per_minute``, owners exempt): over
   it → dropped, the sender told once per window;
3. **slash commands** (``/start``, ``/help``, ``/reset``, ``/status``, ``/pin``, ``/pair``;
   after the gate, and only from a sender whose disposition is ``allow``, so a passive or
   silent member cannot reset a group; ``/pair`` is an owner's; ``/start`` and ``/help`` list
   the commands the sender may use). A command is a trigger like a mention, and so is one of
   the agent's own (``spec.chat.commands``), which goes to the model. A stranger's ``/start``
   under pairing gets the greeting with their code;
4. **session** for ``(gateway, chat_id, agent)`` (exactly one under concurrency);
5. **disposition and mention gating**: a silent sender, or an unaddressed message under
   ``activation: mention`` in ``silent`` buffer mode, goes to the durable context buffer; a
   passive sender (or ``passive`` buffer mode) is recorded as a user message, not answered.
   Either keeps the text (a caption) and names the files it carried (``[photo, not
   downloaded]``): a file nobody answers is never downloaded, as it would be kept unread;
6. **label**: a group message reaches the model as ``<display name|username|id>: text``;
7. **media** (``media_intake``, when the gateway gave the kit a ``MediaIntake``): the photos,
   voice notes and files of a message that will be answered are downloaded, kept in the
   session and named by the message (a voice note's text is its transcript); other
   **non-text** content without a caption (a sticker, a location) is answered with one
   polite sentence (in a group only when it addressed the bot);
8. **dispatch**: the message is offered to the ``Dispatcher`` (the per-session queue), which
   records it durably before returning and runs its turn later.

``message`` returns only once the message is durably recorded (or deliberately dropped): the
adapter confirms the update to its platform after that, so a crash never loses an accepted
message — the platform redelivers it, and de-duplication by platform message id makes the
second copy harmless.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from duragent.agents import Agent, AgentCatalog
from duragent.agents.roles import access_of, is_owner
from duragent.agents.spec import QueueSpec
from duragent.core.attachments import Attachment
from duragent.errors import NotFoundError
from duragent.frontkit.access import GROUP_CHAT_TYPES, admit
from duragent.frontkit.approvals import ApprovalButtons
from duragent.frontkit.chat import ChatTurns, Inbound
from duragent.frontkit.commands import (
    addressed_to,
    agent_command,
    commands_for,
    help_text,
    parse_command,
    parse_intro,
    parse_pin,
    pin_reply,
    run_command,
    start_text,
    stranger_start,
)
from duragent.frontkit.inbound import ButtonPress, InboundMessage
from duragent.frontkit.media import noun
from duragent.frontkit.media_intake import MediaIntake
from duragent.frontkit.pairing_chat import ChatPairing, parse_pair
from duragent.frontkit.queue import Dispatcher
from duragent.frontkit.rates import RATE_FIELD, SenderRates
from duragent.frontkit.routing import RouteQuery, Router

__all__ = ["NON_TEXT_REPLY", "ChatFront"]

log = logging.getLogger(__name__)

NON_TEXT_REPLY = (
    "Sorry, I cannot read that kind of message: send me text, a photo, a voice note or a file."
)


class ChatFront:
    """The pipeline from a chat update to a dispatched turn (see module docstring)."""

    def __init__(
        self,
        chat: ChatTurns,
        router: Router,
        agents: Callable[[], AgentCatalog],
        dispatcher: Dispatcher,
        *,
        bot_username: str | None = None,
        media: MediaIntake | None = None,
    ) -> None:
        """``media``: how the gateway's files are taken in (None: captions only)."""
        self._chat = chat
        self.media = media
        self._router = router
        self._agents = agents
        self._dispatcher = dispatcher
        self.bot_username = bot_username
        """The bot's own name (``/reset@<name>``); set by the adapter once the platform says."""
        self._pairing = ChatPairing(chat.turns.workspace_dir, chat.outbound)
        self._buttons = ApprovalButtons(chat, agents, paired=self._pairing.paired)
        self.rates = SenderRates()
        """Messages per sender per minute (``frontkit.rates``), checked after the gate."""

    async def message(self, msg: InboundMessage) -> None:
        """Take one chat message through the pipeline (returns once it is durable or dropped)."""
        where = f"{msg.chat.target} message {msg.message_id} from {msg.sender.id}"
        agent_name = self._router.route(
            RouteQuery(msg.gateway, msg.chat_type, msg.chat_id, msg.sender.id)
        )
        if agent_name is None:
            log.info("dropped %s: no route in duragent.yaml matches it", where)
            return
        try:
            agent = self._agents().get(agent_name)
        except NotFoundError:  # reloaded away since routing: same as no route
            log.info("dropped %s: agent %r is gone", where, agent_name)
            return
        access = agent.spec.access
        is_group = msg.chat_type in GROUP_CHAT_TYPES
        pairing = self._pairing.applies(access, msg)
        admission = admit(
            access,
            gateway=msg.gateway,
            chat_type=msg.chat_type,
            chat_id=msg.chat_id,
            sender_id=msg.sender.id,
            triggered=not is_group or self._addressed(msg, agent),
            paired=self._pairing.paired(agent_name, msg.gateway, msg.sent_at) if pairing else (),
        )
        if admission.action == "drop":
            log.info("dropped %s for agent %r: %s", where, agent_name, admission.reason)
            if pairing:  # a stranger under dm.policy: pairing is given a code, nothing kept
                told = await self._pairing.stranger(agent_name, msg)
                if told is not None and parse_intro(msg.text, self.bot_username) is not None:
                    told = stranger_start(agent, told)
                if told is not None:
                    await self._chat.outbound.send_text(msg.chat, told, reply_to=msg.message_id)
            return
        rate = self.rates.admit(
            access,
            agent=agent_name,
            gateway=msg.gateway,
            sender_id=msg.sender.id,
            addressed=not is_group or self._addressed(msg, agent),
            sent_at=msg.sent_at,
        )
        if not rate.admitted:  # nothing recorded, no turn; told once per window
            if rate.notice is None:
                log.debug("dropped %s for agent %r: over %s", where, agent_name, RATE_FIELD)
                return
            log.info("dropped %s for agent %r: over %s (told)", where, agent_name, RATE_FIELD)
            await self._chat.outbound.send_text(msg.chat, rate.notice, reply_to=msg.message_id)
            return
        turns = self._chat.turns
        intro = parse_intro(msg.text, self.bot_username)
        if intro is not None and admission.disposition == "allow":
            owner = is_owner(access, msg.gateway, msg.sender.id)
            known = commands_for(agent, owner=owner, group=is_group)
            write = start_text if intro == "start" else help_text
            reply = write(agent, known, group=is_group, bot_username=self.bot_username)
            await self._chat.outbound.send_text(msg.chat, reply, reply_to=msg.message_id)
            return
        command = parse_command(msg.text, self.bot_username)
        if command is not None and admission.disposition == "allow":
            key = (msg.gateway, msg.chat_id, agent_name)
            reply = await run_command(command, turns, key)
            await self._chat.outbound.send_text(msg.chat, reply, reply_to=msg.message_id)
            return
        pair = parse_pair(msg.text, self.bot_username)
        if pair is not None and admission.disposition == "allow":
            reply = await self._pairing.command(access, agent_name, msg, pair)
            await self._chat.outbound.send_text(msg.chat, reply, reply_to=msg.message_id)
            return
        pin = parse_pin(msg.text, self.bot_username)
        session_id = await turns.session_for_chat(
            msg.gateway, msg.chat_id, agent_name, msg.chat_type
        )
        if pin is not None and admission.disposition == "allow":
            reply = await pin_reply(turns, session_id, *pin)
            await self._chat.outbound.send_text(msg.chat, reply, reply_to=msg.message_id)
            return
        label = msg.sender.label
        text = msg.text if msg.text and msg.text.strip() else None
        labelled = f"{label}: {text}" if is_group and text is not None else text
        if admission.action in ("buffer", "record"):
            kept = _unanswered(msg, text)  # its files are named, never downloaded
            if kept is None:
                log.debug("%s: nothing to keep of a %s message", where, msg.content_kind)
            else:
                labelled = f"{label}: {kept}" if is_group else kept
                await self._keep(session_id, msg, labelled, silent=admission.action == "buffer")
            return
        attachments: tuple[Attachment, ...] = ()
        if msg.media and self.media is not None:
            taken = await self.media.take(session_id, msg, agent.directory)
            if taken is None:
                return  # every file refused and no caption: the person was told why
            attachments = taken.attachments
            labelled = f"{label}: {taken.text}".rstrip() if is_group else taken.text
        if labelled is None:
            if is_group and not (msg.mentions_bot or msg.reply_to_bot):
                log.debug("%s: a %s not addressed to the bot; ignored", where, msg.content_kind)
                return  # under ``activation: always`` a sticker must not draw a reply each time
            await self._chat.outbound.send_text(msg.chat, NON_TEXT_REPLY, reply_to=msg.message_id)
            return
        queue = access_of(access).groups.queue if is_group else QueueSpec()
        inbound = Inbound(
            msg.chat,
            labelled,
            agent=agent_name,
            sender_id=msg.sender.id,
            sender_name=label,
            message_id=msg.message_id,
            context_buffer=admission.buffer,
            attachments=attachments,
        )
        await self._dispatcher.offer(session_id, inbound, queue)

    def _addressed(self, msg: InboundMessage, agent: Agent) -> bool:
        """Whether a group message addresses the bot (it may then trigger a turn).

        A mention, a reply to the bot, or a command: one addressed by name (``/x@bot``), one
        the kit runs (``/start``, ``/help``, ``/reset``, ``/status``, ``/pin``, ``/pair``) or
        one of the agent's own (``spec.chat.commands``). A photo or file is addressed the
        same way, by its caption or by replying to the bot.
        """
        text, bot = msg.text, self.bot_username
        return (
            msg.mentions_bot
            or msg.reply_to_bot
            or addressed_to(text, bot)
            or parse_intro(text, bot) is not None
            or parse_command(text, bot) is not None
            or parse_pin(text, bot) is not None
            or parse_pair(text, bot) is not None
            or agent_command(text, bot, agent)
        )

    def agent_for(
        self, gateway: str, chat_type: str, chat_id: str = "", sender_id: str = ""
    ) -> Agent | None:
        """The agent ``routes`` give a chat (no id: any chat no id-specific rule names).

        For a platform's command menu, which is per kind of chat, not per message.
        """
        name = self._router.route(RouteQuery(gateway, chat_type, chat_id, sender_id))
        return None if name is None else self._agents().agents.get(name)

    @property
    def catalog(self) -> AgentCatalog:
        """The agents as loaded now (a reload swaps it: a menu built from it is redone)."""
        return self._agents()

    async def _keep(
        self, session_id: str, msg: InboundMessage, labelled: str, *, silent: bool
    ) -> None:
        """Record a message nobody answers: chatter for the buffer, or a passive user message."""
        await self._chat.turns.record_unanswered(
            session_id,
            labelled,
            sender_id=msg.sender.id,
            sender_name=msg.sender.label,
            platform_message_id=msg.message_id,
            silent=silent,
        )

    async def press(self, press: ButtonPress) -> None:
        """Answer a press on a button the kit sent (an approval's decision)."""
        await self._buttons.press(press)


def _unanswered(msg: InboundMessage, text: str | None) -> str | None:
    """What is kept of a message nobody answers: its files named, then its text (or None).

    The files are not downloaded (the person did not address the bot, and they would be
    kept unread); the line lets a later turn know one was sent and that it was not seen.
    """
    files = " ".join(f"[{noun(ref.kind)}, not downloaded]" for ref in msg.media)
    kept = " ".join(part for part in (files, text) if part)
    return kept or None
