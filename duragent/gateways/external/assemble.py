"""Building the external gateways from the kit's parts (what the runtime calls).

Each ``gateways.external[]`` entry becomes an ``ExternalGateway`` whose chat front is the
kit's, exactly as Telegram's: ``ChatTurns`` over the gateway's ``ExternalOutbound``, the
per-session queues, the router over ``routes[]`` (matching the entry's ``name``), the
``ChatFront`` pipeline and ``recover_chats``.

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
from dataclasses import dataclass
from pathlib import Path

from duragent.agents import AgentCatalog
from duragent.config.workspace import ExternalGatewayConfig, RouteConfig
from duragent.core.tasks import BackgroundTasks
from duragent.frontkit import (
    ButtonPress,
    ChatFront,
    ChatTurns,
    InboundMessage,
    OutboundPort,
    Router,
    SessionQueues,
    recover_chats,
)
from duragent.gateways.external.service import DEFAULT_TIMINGS, ExternalGateway, Timings
from duragent.turns import TurnRunner

__all__ = ["ExternalChats", "ExternalGateways", "build_external_gateway"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ExternalChats:
    """The chat front of one external gateway, and its recovery at start."""

    gateway: str
    front: ChatFront
    queues: SessionQueues
    chat: ChatTurns

    async def message(self, msg: InboundMessage) -> None:
        """Route, check and record ``msg`` (``ChatFront.message``)."""
        await self.front.message(msg)

    async def press(self, press: ButtonPress) -> None:
        """Act on a button press (``ChatFront.press``)."""
        await self.front.press(press)

    async def recover(self) -> None:
        """Deliver, ask again and answer what a crash left (``recover_chats``)."""
        await recover_chats(self.gateway, self.chat.turns.registry, self.chat.delivery, self.queues)

    def bot_named(self, username: str) -> None:
        """``/reset@<username>`` is a command for this bot."""
        self.front.bot_username = username


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
    timings: Timings = DEFAULT_TIMINGS,
) -> ExternalGateway:
    """The service for ``gateways.external[index]``; its chat front is built when it starts."""
    router = Router(routes, catalog)

    def chats(outbound: OutboundPort) -> ExternalChats:
        chat = ChatTurns(turns, outbound, tasks)
        queues = SessionQueues(turns, chat, outbound, tasks, turn_timeout=request_timeout)
        log.info("gateway %s: %s", config.name, router.startup_note())
        front = ChatFront(chat, router, catalog, queues, bot_username=config.bot_username)
        return ExternalChats(config.name, front, queues, chat)

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
