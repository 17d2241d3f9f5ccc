"""Building the Telegram front end from the kit's parts (what the runtime calls).

The runtime knows ``gateways.telegram`` and the shared services; the kit knows how a chat
message becomes a turn. This joins them once the bot is known (``getMe`` happened): the
outbound port over the bot, ``ChatTurns`` (turn + delivery), the per-session queues, the
router over ``routes[]``, the ``ChatFront`` pipeline, and the recovery of what a crash left
unfinished, which the gateway runs before it takes the first update.

With several nodes and long polling, the polling node hands an update for a chat whose
session another node serves to that node (``relay``: ``frontkit.relayed``), and takes those
handed to it when it stands by. In webhook mode the HTTP front end forwards the update's
request itself (``gateways/http/webhooks.py``), so no relay is given.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from duragent.agents import AgentCatalog
from duragent.config.workspace import RouteConfig, TelegramConfig
from duragent.frontkit import (
    ChatRelay,
    GatewayChats,
    MediaSettings,
    MediaSource,
    OutboundPort,
    Router,
    gateway_chats,
)
from duragent.gateways.telegram.service import TelegramGateway
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.store.cluster import Cluster
from duragent.turns import TurnRunner

__all__ = ["build_telegram_gateway", "is_group_chat"]

log = logging.getLogger(__name__)


def is_group_chat(chat_id: str) -> bool:
    """Telegram's ids: a user's chat is positive, a group's or a channel's negative."""
    return chat_id.startswith("-")


def build_telegram_gateway(
    config: TelegramConfig,
    turns: TurnRunner,
    tasks: BackgroundTasks,
    *,
    catalog: Callable[[], AgentCatalog],
    routes: Sequence[RouteConfig],
    request_timeout: float | None = None,
    cluster: Cluster | None = None,
    relay: ChatRelay | None = None,
    media: MediaSettings | None = None,
) -> TelegramGateway:
    """The Telegram service; its chat front is built when it starts.

    ``media``: how photos, voice notes and files are taken in (``media:`` of duragent.yaml).
    """
    router = Router(routes, catalog)
    media = media or MediaSettings()

    def chats(outbound: OutboundPort, bot_username: str, files: MediaSource) -> GatewayChats:
        return gateway_chats(
            "telegram",
            outbound,
            turns,
            tasks,
            router=router,
            catalog=catalog,
            bot_username=bot_username,
            request_timeout=request_timeout,
            cluster=cluster,
            relay=None if config.webhook_url else relay,
            is_group=is_group_chat,
            media=files,
            media_settings=media,
        )

    return TelegramGateway(
        config,
        chats,
        tasks,
        metrics=turns.metrics,
        cluster=cluster,
        max_photo_bytes=media.limits.image,
    )
