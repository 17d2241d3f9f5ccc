"""One chat gateway's kit, assembled: what every platform adapter hands its messages to.

An adapter (Telegram, Discord, an external gateway) translates its platform's updates into
``InboundMessage`` and ``ButtonPress``; everything after that is the same for all of them and
is built here once the bot is known: ``ChatTurns`` over the adapter's outbound port (turn +
delivery + "typing…"), the per-session queues, the ``ChatFront`` pipeline over the router, and
the recovery of what a crash left, which the adapter runs before it takes the first message.

Recovery needs to know whether a chat is a group (its queue rules and the group context
block): each platform says so its own way (Telegram by the id's sign, Discord from its
channel cache); a platform that cannot (an external gateway) resumes a chat with a DM's
rules, and new messages, which carry their chat type, get the full rules.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from duragent.agents import AgentCatalog
from duragent.agents.spec import ContextBufferSpec, QueueSpec
from duragent.core.tasks import BackgroundTasks
from duragent.errors import NotFoundError
from duragent.frontkit.access import GROUP_CHAT_TYPES, mention_context
from duragent.frontkit.chat import TYPING_EVERY_SECONDS, ChatTurns
from duragent.frontkit.gateway import ChatFront
from duragent.frontkit.inbound import ButtonPress, InboundMessage
from duragent.frontkit.outbound import OutboundPort, metered
from duragent.frontkit.queue import SessionQueues
from duragent.frontkit.recovery import recover_chats
from duragent.frontkit.routing import Router
from duragent.turns import TurnRunner

__all__ = ["ChatHandler", "GatewayChats", "gateway_chats"]

log = logging.getLogger(__name__)


class ChatHandler(Protocol):
    """What a platform adapter hands translated updates to (``GatewayChats``)."""

    async def message(self, msg: InboundMessage) -> None:
        """Route, check and record ``msg``; return once it is on disk or dropped."""
        ...

    async def press(self, press: ButtonPress) -> None:
        """Act on a button press."""
        ...

    async def recover(self) -> None:
        """Finish what a crash left unfinished (run before the first update is taken)."""
        ...


@dataclass(frozen=True, slots=True)
class GatewayChats:
    """One gateway's chat front, and its recovery before it takes messages.

    See the module docstring.
    """

    gateway: str
    front: ChatFront
    queues: SessionQueues
    chat: ChatTurns
    catalog: Callable[[], AgentCatalog]
    is_group: Callable[[str], bool] | None = None
    """Whether a chat id is a group's (for recovery); None: the platform cannot tell."""

    async def message(self, msg: InboundMessage) -> None:
        """Route, check and record ``msg`` (``ChatFront.message``)."""
        await self.front.message(msg)

    async def press(self, press: ButtonPress) -> None:
        """Act on a button press (``ChatFront.press``)."""
        await self.front.press(press)

    async def recover(self) -> None:
        """Deliver, ask again and answer what a crash left (``recover_chats``)."""
        await recover_chats(
            self.gateway,
            self.chat.turns.registry,
            self.chat.delivery,
            self.queues,
            settings=self._rules,
        )

    def bot_named(self, username: str) -> None:
        """The bot's name on the platform is known (``/reset@<name>`` is then a command)."""
        self.front.bot_username = username

    def _rules(
        self, agent_name: str, chat_id: str, chat_type: str | None
    ) -> tuple[QueueSpec, ContextBufferSpec | None]:
        """The queue and group context a chat's messages would have had through ``ChatFront``.

        A group is what the platform said when the session began (``chat_type``); for a
        session older than that record, what the chat id tells, where it tells anything.
        """
        try:
            access = self.catalog().get(agent_name).spec.access
        except NotFoundError:
            return QueueSpec(), None
        if chat_type is not None:
            group = chat_type in GROUP_CHAT_TYPES
        else:
            group = self.is_group is not None and self.is_group(chat_id)
        if access is None or not group:
            return QueueSpec(), None
        return access.groups.queue, mention_context(access.groups)


def gateway_chats(
    gateway: str,
    outbound: OutboundPort,
    turns: TurnRunner,
    tasks: BackgroundTasks,
    *,
    router: Router,
    catalog: Callable[[], AgentCatalog],
    bot_username: str | None = None,
    request_timeout: float | None = None,
    typing_every: float = TYPING_EVERY_SECONDS,
    is_group: Callable[[str], bool] | None = None,
) -> GatewayChats:
    """The kit for ``gateway`` over ``outbound`` (its adapter calls this once the bot is known).

    ``request_timeout``: how long a turn may run before the queue gives up on it;
    ``typing_every``: how often "typing…" is renewed (the platform shows it for a while).
    """
    outbound = metered(outbound, gateway, turns.metrics)
    chat = ChatTurns(turns, outbound, tasks, typing_every=typing_every)
    queues = SessionQueues(turns, chat, outbound, tasks, turn_timeout=request_timeout)
    if turns.metrics is not None:
        turns.metrics.chat_queue(gateway, queues.pending)
    log.info("%s: %s", gateway, router.startup_note())
    front = ChatFront(chat, router, catalog, queues, bot_username=bot_username)
    return GatewayChats(gateway, front, queues, chat, catalog, is_group)
