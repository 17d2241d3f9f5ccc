"""Building the external gateways from the kit's parts (what the runtime calls).

Each ``gateways.external[]`` entry becomes an ``ExternalGateway`` whose chat front is the
kit's, exactly as Telegram's: ``ChatTurns`` over the gateway's ``ExternalOutbound``, the
per-session queues, the router over ``routes[]`` (matching the entry's ``name``), the
``ChatFront`` pipeline and ``recover_chats``. Files a gateway links in ``media`` content are
downloaded by ``GatewayMedia`` (``media``: public addresses and ``media.allow_private``).

With several nodes, a gateway without ``fans_out`` (its platform hands each message to one
node) hands a message for a chat another node serves to that node (``frontkit.relayed``);
with ``fans_out`` the owner receives its own copy and the others defer (``frontkit.owners``).

``ExternalGateways`` is the one runtime service for all of them: it starts each in turn, and
one that cannot start (its command is missing, say) is logged by name and config field and
marked ``failed`` while the others start; stopping stops every one that started.

Recovery at start cannot tell a group from a DM by its id (unlike Telegram's negative ids),
so a group's unanswered messages are resumed with the default queue rules and without the
group's context block; new messages carry their chat type and get the full rules.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from duragent.agents import AgentCatalog
from duragent.config.workspace import ExternalGatewayConfig, RouteConfig
from duragent.frontkit import (
    ChatRelay,
    GatewayChats,
    MediaSettings,
    OutboundPort,
    Router,
    gateway_chats,
)
from duragent.gateways.external.media import DEFAULT_ALLOW_PRIVATE, GatewayMedia
from duragent.gateways.external.service import DEFAULT_TIMINGS, ExternalGateway, Timings
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.store.cluster import Cluster
from duragent.turns import TurnRunner

__all__ = ["ExternalGateways", "build_external_gateway"]

log = logging.getLogger(__name__)


def build_external_gateway(
    config: ExternalGatewayConfig,
    index: int,
    config_dir: Path,
    turns: TurnRunner,
    tasks: BackgroundTasks,
    *,
    catalog: Callable[[], AgentCatalog],
    routes: Sequence[RouteConfig],
    request_timeout: float | None = None,
    cluster: Cluster | None = None,
    relay: ChatRelay | None = None,
    timings: Timings = DEFAULT_TIMINGS,
    media: MediaSettings | None = None,
    allow_private: Sequence[str] = DEFAULT_ALLOW_PRIVATE,
) -> ExternalGateway:
    """The service for ``gateways.external[index]``; its chat front is built when it starts.

    ``media``: how the files its messages link are taken in; ``allow_private``: the
    non-public addresses they may be downloaded from (``media.allow_private``).
    """
    router = Router(routes, catalog)
    files = GatewayMedia(allow_private)

    def chats(outbound: OutboundPort) -> GatewayChats:
        return gateway_chats(
            config.name,
            outbound,
            turns,
            tasks,
            router=router,
            catalog=catalog,
            bot_username=config.bot_username,
            request_timeout=request_timeout,
            cluster=cluster,
            relay=relay,
            fans_out=config.fans_out,  # every node's plugin receives every message
            media=files,
            media_settings=media,
        )

    return ExternalGateway(config, index, config_dir, chats, tasks, timings=timings)


class ExternalGateways:
    """Every external gateway as one service (see module docstring)."""

    def __init__(self, gateways: Sequence[ExternalGateway]) -> None:
        self.gateways = tuple(gateways)
        self._started: list[ExternalGateway] = []

    async def start(self) -> None:
        """Start each gateway; one that fails is logged and the others still start."""
        for gateway in self.gateways:
            try:
                await gateway.start()
            except Exception as exc:
                log.error(
                    "gateway %s did not start: %s; the other front ends keep serving",
                    gateway.name,
                    exc,
                )
                continue
            self._started.append(gateway)

    async def stop(self) -> None:
        """Stop every gateway that started (together: each may wait its grace period)."""
        started, self._started = self._started, []
        results = await asyncio.gather(*(g.stop() for g in started), return_exceptions=True)
        for gateway, result in zip(started, results, strict=True):
            if isinstance(result, Exception):
                log.error("gateway %s did not stop cleanly: %s", gateway.name, result)
