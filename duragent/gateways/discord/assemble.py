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

from duragent.agents import AgentCatalog
from duragent.config.workspace import DiscordConfig, RouteConfig
from duragent.frontkit import (
    GatewayChats,
    MediaSettings,
    MediaSource,
    OutboundPort,
    Router,
    gateway_chats,
)
from duragent.gateways.discord.messages import GATEWAY
from duragent.gateways.discord.service import GUILD_READY_SECONDS, DiscordGateway
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.store.cluster import Cluster
from duragent.turns import TurnRunner

__all__ = ["TYPING_EVERY_SECONDS", "build_discord_gateway"]

log = logging.getLogger(__name__)

TYPING_EVERY_SECONDS = 8.0
"""Discord shows "typing…" for about 10 s; renewed a little sooner."""


def build_discord_gateway(
    config: DiscordConfig,
    turns: TurnRunner,
    tasks: BackgroundTasks,
    *,
    catalog: Callable[[], AgentCatalog],
    routes: Sequence[RouteConfig],
    request_timeout: float | None = None,
    cluster: Cluster | None = None,
    guild_ready_seconds: float = GUILD_READY_SECONDS,
    media: MediaSettings | None = None,
) -> DiscordGateway:
    """The Discord service; its chat front is built once the bot has logged in.

    ``guild_ready_seconds``: how long discord.py waits after READY for further guilds (its
    default, 2 s; tests against one fake guild make it short); ``media``: how attachments
    are taken in (``media:`` of duragent.yaml).
    """
    router = Router(routes, catalog)

    def chats(
        outbound: OutboundPort,
        bot_username: str,
        is_group: Callable[[str], bool],
        files: MediaSource,
    ) -> GatewayChats:
        return gateway_chats(
            GATEWAY,
            outbound,
            turns,
            tasks,
            router=router,
            catalog=catalog,
            bot_username=bot_username,
            request_timeout=request_timeout,
            cluster=cluster,
            fans_out=True,  # every connected node receives every event
            typing_every=TYPING_EVERY_SECONDS,
            is_group=is_group,
            media=files,
            media_settings=media,
        )

    return DiscordGateway(
        config, chats, tasks, guild_ready_seconds=guild_ready_seconds, metrics=turns.metrics
    )
