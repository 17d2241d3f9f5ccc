"""``ChatFront``: the platform-neutral pipeline every chat adapter hands its updates to.

An adapter (Telegram, Discord, a plugin) translates an update into an ``InboundMessage`` or a
``ButtonPress`` and calls ``message`` or ``press``. Everything else is decided here, once, in
this order (spec ``202611240305.chat-gateway-core``):

1. **route** (``Router``): no agent → dropped, one log line (fail closed);
2. **access gate** (``spec.access``: DM / group policy): refused → dropped, one log line; a
   blocked group sender likewise;
3. **slash commands** (``/reset``, ``/status``; after the gate, and only from a sender whose
   disposition is ``allow``, so a passive or silent member cannot reset a group);
4. **session** for ``(gateway, chat_id, agent)`` (exactly one under concurrency);
5. **disposition and mention gating**: a silent sender, or an unaddressed message under
   ``activation: mention`` in ``silent`` buffer mode, goes to the durable context buffer; a
   passive sender (or ``passive`` buffer mode) is recorded as a user message, not answered;
6. **label**: a group message reaches the model as ``<display name|username|id>: text``;
7. **non-text** content without a caption is answered with one polite sentence (in a group
   only when it addressed the bot);
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
from typing import Protocol

from duragent.agents import AgentCatalog
from duragent.agents.spec import QueueSpec
from duragent.errors import NotFoundError
from duragent.frontkit.access import GROUP_CHAT_TYPES, admit
from duragent.frontkit.approvals import ApprovalButtons
from duragent.frontkit.chat import ChatTurns, Inbound
from duragent.frontkit.commands import parse_command, parse_pin, pin_reply, run_command
from duragent.frontkit.inbound import ButtonPress, InboundMessage
from duragent.frontkit.routing import RouteQuery, Router

__all__ = ["NON_TEXT_REPLY", "ChatFront", "Dispatcher"]

log = logging.getLogger(__name__)

NON_TEXT_REPLY = "Sorry, I can only read text messages (a caption works too)."


class Dispatcher(Protocol):
    """Where accepted messages go: the per-session queue (``SessionQueues``)."""

    async def offer(self, session_id: str, inbound: Inbound, queue: QueueSpec) -> None:
        """Accept ``inbound`` for its session: recorded durably before returning; its turn runs later."""  # noqa: E501
        ...


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
    ) -> None:
        self._chat = chat
        self._router = router
        self._agents = agents
        self._dispatcher = dispatcher
        self.bot_username = bot_username
        """The bot's own name (``/reset@<name>``); set by the adapter once the platform says."""
        self._buttons = ApprovalButtons(chat)

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
        admission = admit(
            access,
            gateway=msg.gateway,
            chat_type=msg.chat_type,
            chat_id=msg.chat_id,
            sender_id=msg.sender.id,
            triggered=not is_group or msg.mentions_bot or msg.reply_to_bot,
        )
        if admission.action == "drop":
            log.info("dropped %s for agent %r: %s", where, agent_name, admission.reason)
            return
        turns = self._chat.turns
        command = parse_command(msg.text, self.bot_username)
        if command is not None and admission.disposition == "allow":
            key = (msg.gateway, msg.chat_id, agent_name)
            reply = await run_command(command, turns.registry, key)
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
            if labelled is None:
                log.debug("%s: nothing to keep of a %s message", where, msg.content_kind)
            else:
                await self._keep(session_id, msg, labelled, silent=admission.action == "buffer")
            return
        if labelled is None:
            if is_group and not (msg.mentions_bot or msg.reply_to_bot):
                log.debug("%s: a %s not addressed to the bot; ignored", where, msg.content_kind)
                return  # under ``activation: always`` a sticker must not draw a reply each time
            await self._chat.outbound.send_text(msg.chat, NON_TEXT_REPLY, reply_to=msg.message_id)
            return
        queue = access.groups.queue if access is not None and is_group else QueueSpec()
        inbound = Inbound(
            msg.chat,
            labelled,
            agent=agent_name,
            sender_id=msg.sender.id,
            sender_name=label,
            message_id=msg.message_id,
            context_buffer=admission.buffer,
        )
        await self._dispatcher.offer(session_id, inbound, queue)

    async def _keep(
        self, session_id: str, msg: InboundMessage, labelled: str, *, silent: bool
    ) -> None:
        """Record a message nobody answers: chatter for the buffer, or a passive user message."""
        session = self._chat.turns.registry.handle(session_id)
        label = msg.sender.label
        if silent:
            await session.add_silent_message(
                labelled,
                sender_id=msg.sender.id,
                sender_name=label,
                platform_message_id=msg.message_id,
            )
        else:
            await session.add_user_message(
                labelled,
                sender_id=msg.sender.id,
                sender_name=label,
                platform_message_id=msg.message_id,
                passive=True,  # owed no answer: recovery must not answer it after a restart
            )

    async def press(self, press: ButtonPress) -> None:
        """Answer a press on a button the kit sent (an approval's decision)."""
        await self._buttons.press(press)
