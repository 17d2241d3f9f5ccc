"""Building the Telegram front end from the kit's parts (what the runtime calls).

The runtime knows ``gateways.telegram`` and the shared services; the kit knows how a chat
message becomes a turn. This joins them once the bot is known (``getMe`` happened): the
outbound port over the bot, ``ChatTurns`` (turn + delivery), the per-session queues, the
router over ``routes[]``, the ``ChatFront`` pipeline, and the recovery of what a crash left
unfinished, which the gateway runs before it takes the first update.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from duragent.agents import AgentCatalog
from duragent.agents.spec import ContextBufferSpec, QueueSpec
from duragent.config.workspace import RouteConfig, TelegramConfig
from duragent.core.tasks import BackgroundTasks
from duragent.errors import NotFoundError
from duragent.frontkit import (
    ButtonPress,
    ChatFront,
    ChatTurns,
    InboundMessage,
    OutboundPort,
    Router,
    SessionQueues,
    mention_context,
    recover_chats,
)
from duragent.gateways.telegram.service import TelegramGateway
from duragent.turns import TurnRunner

__all__ = ["TelegramChats", "build_telegram_gateway", "is_group_chat"]

log = logging.getLogger(__name__)


def is_group_chat(chat_id: str) -> bool:
    """Telegram's ids: a user's chat is positive, a group's or a channel's negative."""
    return chat_id.startswith("-")


@dataclass(frozen=True, slots=True)
class TelegramChats:
    """The chat front, and how to finish what a crash left before taking updates."""

    front: ChatFront
    queues: SessionQueues
    chat: ChatTurns
    catalog: Callable[[], AgentCatalog]

    async def message(self, msg: InboundMessage) -> None:
        """Route, check and record ``msg`` (``ChatFront.message``)."""
        await self.front.message(msg)

    async def press(self, press: ButtonPress) -> None:
        """Act on a button press (``ChatFront.press``)."""
        await self.front.press(press)

    async def recover(self) -> None:
        """Deliver, ask again and answer what a crash left (``recover_chats``)."""
        registry = self.chat.turns.registry
        await recover_chats(
            "telegram", registry, self.chat.delivery, self.queues, settings=self._rules
        )

    def _rules(self, agent_name: str, chat_id: str) -> tuple[QueueSpec, ContextBufferSpec | None]:
        """The queue and group context a chat's messages would have had through ``ChatFront``."""
        try:
            access = self.catalog().get(agent_name).spec.access
        except NotFoundError:
            return QueueSpec(), None
        if access is None or not is_group_chat(chat_id):
            return QueueSpec(), None
        return access.groups.queue, mention_context(access.groups)


def build_telegram_gateway(
    config: TelegramConfig,
    turns: TurnRunner,
    tasks: BackgroundTasks,
    *,
    catalog: Callable[[], AgentCatalog],
    routes: Sequence[RouteConfig],
    request_timeout: float | None = None,
) -> TelegramGateway:
    """The Telegram service; its chat front is built when it starts."""
    router = Router(routes, catalog)

    def chats(outbound: OutboundPort, bot_username: str) -> TelegramChats:
        chat = ChatTurns(turns, outbound, tasks)
        queues = SessionQueues(turns, chat, outbound, tasks, turn_timeout=request_timeout)
        log.info("telegram: %s", router.startup_note())
        front = ChatFront(chat, router, catalog, queues, bot_username=bot_username)
        return TelegramChats(front, queues, chat, catalog)

    return TelegramGateway(config, chats, tasks)
