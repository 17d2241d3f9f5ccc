"""Building the Discord front end from the kit's parts (what the runtime calls).

The same joins as Telegram's, once the bot is known (logged in): the outbound port over the
client, ``ChatTurns`` (turn + delivery, "typing…" renewed every 8 s since Discord shows it for
10), the per-session queues, the router over ``routes[]``, the ``ChatFront`` pipeline, and the
recovery of what a crash left unfinished, which the gateway runs once Discord says READY and
before it takes the first message. Whether a recovered chat is a group (its queue rules and
context buffer) is read from discord.py's channel cache, filled by READY's guilds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from duragent.agents import AgentCatalog
from duragent.agents.spec import ContextBufferSpec, QueueSpec
from duragent.config.workspace import DiscordConfig, RouteConfig
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
from duragent.gateways.discord.messages import GATEWAY
from duragent.gateways.discord.service import GUILD_READY_SECONDS, DiscordGateway
from duragent.turns import TurnRunner

__all__ = ["TYPING_EVERY_SECONDS", "DiscordChats", "build_discord_gateway"]

log = logging.getLogger(__name__)

TYPING_EVERY_SECONDS = 8.0
"""Discord shows "typing…" for about 10 s; renewed a little sooner."""


@dataclass(frozen=True, slots=True)
class DiscordChats:
    """The chat front, and how to finish what a crash left before taking messages."""

    front: ChatFront
    queues: SessionQueues
    chat: ChatTurns
    catalog: Callable[[], AgentCatalog]
    is_group: Callable[[str], bool]

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
            GATEWAY, registry, self.chat.delivery, self.queues, settings=self._rules
        )

    def _rules(self, agent_name: str, chat_id: str) -> tuple[QueueSpec, ContextBufferSpec | None]:
        """The queue and group context a chat's messages would have had through ``ChatFront``."""
        try:
            access = self.catalog().get(agent_name).spec.access
        except NotFoundError:
            return QueueSpec(), None
        if access is None or not self.is_group(chat_id):
            return QueueSpec(), None
        return access.groups.queue, mention_context(access.groups)


def build_discord_gateway(
    config: DiscordConfig,
    turns: TurnRunner,
    tasks: BackgroundTasks,
    *,
    catalog: Callable[[], AgentCatalog],
    routes: Sequence[RouteConfig],
    request_timeout: float | None = None,
    guild_ready_seconds: float = GUILD_READY_SECONDS,
) -> DiscordGateway:
    """The Discord service; its chat front is built once the bot has logged in.

    ``guild_ready_seconds``: how long discord.py waits after READY for further guilds (its
    default, 2 s; tests against one fake guild make it short).
    """
    router = Router(routes, catalog)

    def chats(
        outbound: OutboundPort, bot_username: str, is_group: Callable[[str], bool]
    ) -> DiscordChats:
        chat = ChatTurns(turns, outbound, tasks, typing_every=TYPING_EVERY_SECONDS)
        queues = SessionQueues(turns, chat, outbound, tasks, turn_timeout=request_timeout)
        log.info("discord: %s", router.startup_note())
        front = ChatFront(chat, router, catalog, queues, bot_username=bot_username)
        return DiscordChats(front, queues, chat, catalog, is_group)

    return DiscordGateway(config, chats, tasks, guild_ready_seconds=guild_ready_seconds)
