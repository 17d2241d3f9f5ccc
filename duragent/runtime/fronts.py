"""The chat gateways, the scheduler and background jobs, as ``serve`` builds and wires them.

Each chat platform is built only when its ``duragent.yaml`` section asks for it (and its SDK
imported only then); every one is handed the same turn runner and background tasks. What
runs outside a chat's own front end but must reach a chat (a scheduled run, a background job
that ended) finds it here by gateway name (``outbound_port``). ``Runtime`` lists the services
built here in its ``SERVICES``; this module only builds them. Every chat gateway takes files
in by the same ``media:`` settings (``runtime.media``), built once.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from duragent.agents import Agent, AgentCatalog
from duragent.agents.roles import access_of
from duragent.cluster import OwnerRelay
from duragent.config import WorkspaceConfig
from duragent.errors import ConfigError
from duragent.frontkit import (
    ChatGateway,
    ChatRelay,
    MediaSettings,
    OutboundPort,
    ProcessNotices,
    SessionNotices,
    WebhookReceiver,
    metered,
)
from duragent.lifecycle.services import Hooks, Service
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.runtime.media import media_settings
from duragent.scheduler import Clock, Destination, SchedulerSettings, Schedules, ScheduleTool
from duragent.scheduler.relayed import ScheduledRuns
from duragent.session import SessionRegistry
from duragent.store import SharedStorage
from duragent.store.backends import cluster_storage, schedule_storage
from duragent.tools.base import Tool
from duragent.tools.processes import BackgroundProcessTool, ProcessRegistry
from duragent.turns import TurnRunner

__all__ = ["Fronts", "GatewayBuilder"]

GatewayBuilder = Callable[..., ChatGateway]
"""A chat platform's ``build_<name>_gateway(config, turns, tasks, *, catalog, routes,
request_timeout, cluster, media)`` (imported only when the platform is configured);
Telegram's also takes ``relay``."""


class Fronts:
    """Builds the chat gateways and the scheduler; finds a chat's outbound port by gateway."""

    def __init__(
        self,
        config: WorkspaceConfig,
        root: Path,
        schedules_dir: Path,
        processes_dir: Path,
        registry: SessionRegistry,
        tasks: BackgroundTasks,
        catalog: Callable[[], AgentCatalog],
        clock: Clock | None = None,
    ) -> None:
        self._config = config
        self._clock = clock
        self._root = root
        self._schedules_dir = schedules_dir
        self._processes_dir = processes_dir
        self._registry = registry
        self._tasks = tasks
        self._catalog = catalog
        self._gateways: dict[str, ChatGateway] = {}
        self.cluster = cluster_storage(registry.store)
        """What the nodes serving the workspace share (inbound ledger, leader leases…)."""
        store = registry.store
        self.owner_relay = (
            OwnerRelay(store.nodes, store.lease_seconds)
            if isinstance(store, SharedStorage)
            else None
        )
        """Several nodes: payloads handed to their session's owner (``cluster.relay``)."""
        self.relay = None if self.owner_relay is None else ChatRelay(self.owner_relay)
        """The chat gateways' messages over it (``frontkit.relayed``)."""
        self.schedules: Schedules | None = None
        """The scheduler front end, once built (None when ``scheduler.enabled`` is false)."""
        self._turns: TurnRunner | None = None
        self._processes: ProcessRegistry | None = None
        self._media: MediaSettings | None = None

    @property
    def media(self) -> MediaSettings:
        """How the chat gateways take photos, voice notes and files in (``media:``)."""
        if self._media is None:
            self._media = media_settings(self._config.media, os.environ)
        return self._media

    def serve_with(self, turns: TurnRunner) -> ProcessRegistry:
        """Use ``turns`` for every front end; returns the background-job registry.

        A step of its own because the turn runner is built with ``extra_tools`` (below).
        """
        self._turns = turns
        self._processes = ProcessRegistry(
            self._processes_dir,
            events=ProcessNotices(SessionNotices(turns, self.outbound_port), self._unlink),
        )
        return self._processes

    @property
    def turns(self) -> TurnRunner:
        """The one turn runner (given by ``serve_with``)."""
        assert self._turns is not None, "Fronts.serve_with was not called"
        return self._turns

    # --- the services ---------------------------------------------------------------------

    def telegram(self) -> Service | None:
        """``gateways.telegram`` (enabled): the Telegram front end (its SDK imported only now)."""

        def builder() -> GatewayBuilder:
            from duragent.gateways.telegram import build_telegram_gateway

            return build_telegram_gateway

        return self._chat_platform("telegram", "python-telegram-bot", builder, relay=self.relay)

    def discord(self) -> Service | None:
        """``gateways.discord`` (enabled): the Discord front end (its SDK imported only now)."""

        def builder() -> GatewayBuilder:
            from duragent.gateways.discord import build_discord_gateway

            return build_discord_gateway

        return self._chat_platform("discord", "discord.py", builder)

    def relay_service(self) -> Service | None:
        """Closing the relay's connections (started before the gateways, stopped after)."""
        relay = self.owner_relay
        if relay is None:
            return None
        return Hooks(stop=relay.aclose)

    def _chat_platform(
        self, name: str, sdk: str, builder: Callable[[], GatewayBuilder], **extra: object
    ) -> Service | None:
        """The ``gateways.<name>`` front end when enabled; ``builder`` imports its SDK."""
        config = getattr(self._config.gateways, name)
        if config is None or not config.enabled:
            return None
        try:
            build = builder()
        except ImportError as exc:  # the SDK is a dependency: the install itself is broken
            raise ConfigError(
                f"gateways.{name} is enabled but {sdk}, which duragent installs, cannot be "
                f"imported ({exc}): reinstall duragent (`pip install -e .` in a clone, "
                "`pip install --force-reinstall duragent` otherwise)"
            ) from exc
        gateway = build(
            config,
            self.turns,
            self._tasks,
            catalog=self._catalog,
            routes=self._config.routes,
            request_timeout=self._config.server.request_timeout_seconds,
            cluster=self.cluster,
            media=self.media,
            **extra,
        )
        self._gateways[gateway.name] = gateway
        return gateway

    def external(self) -> Service | None:
        """``gateways.external[]``: every external gateway, one child process each."""
        shadowed = self._config.gateways.shadowed()  # reported by load_workspace
        configs = [
            (i, c) for i, c in enumerate(self._config.gateways.external) if i not in shadowed
        ]
        if not configs:
            return None
        from duragent.gateways.external import ExternalGateways, build_external_gateway

        gateways = [
            build_external_gateway(
                config,
                index,
                self._root,
                self.turns,
                self._tasks,
                catalog=self._catalog,
                routes=self._config.routes,
                request_timeout=self._config.server.request_timeout_seconds,
                cluster=self.cluster,
                relay=self.relay,
                media=self.media,
                allow_private=self._config.media.allow_private,
            )
            for index, config in configs
        ]
        for gateway in gateways:
            self._gateways[gateway.name] = gateway
        return ExternalGateways(gateways)

    def scheduler(self) -> Service | None:
        """``scheduler`` (enabled by default): schedule files, declared schedules, the loop."""
        config = self._config.scheduler
        if not config.enabled:
            return None
        self.schedules = Schedules(
            self._schedules_dir,
            agents=self._catalog,
            settings=SchedulerSettings(
                max_concurrent_runs=config.max_concurrent_runs,
                one_shot_grace_seconds=config.one_shot_grace_seconds,
                recurring_grace_seconds=config.recurring_grace_seconds,
            ),
            turns=self.turns,
            outbound=self.outbound_port,
            storage=schedule_storage(self._registry.store),
            cluster=self.cluster,
            clock=self._clock,
        )
        payloads = self.schedules.chat
        if self.owner_relay is not None and payloads is not None:  # several nodes
            payloads.relay = self.owner_relay  # a due time runs where its chat lives
            known, runs = self.schedules.scheduler.get, self.schedules.runs
            self.owner_relay.listen(ScheduledRuns(known, payloads, runs, self.schedules.clock))
        return self.schedules

    # --- finding chats ----------------------------------------------------------------------

    def outbound_port(self, gateway: str) -> OutboundPort | None:
        """What sends into chats of ``gateway`` (None: not configured or not started)."""
        served = self._gateways.get(gateway)
        port = served.outbound if served is not None else None
        return metered(port, gateway, self.turns.metrics) if port is not None else None

    def gateway_states(self) -> dict[str, str]:
        """Each chat gateway's state (``/readyz``)."""
        return {name: gateway.state for name, gateway in self._gateways.items()}

    def down(self) -> dict[str, str]:
        """Front ends that started but cannot do their work now (the scheduler's loop ended)."""
        schedules = self.schedules
        reason = schedules.down() if schedules is not None else None
        return {"scheduler": reason} if reason is not None else {}

    def skipped_records(self) -> dict[str, list[dict[str, str]]]:
        """Records set aside rather than loaded, by kind (``/readyz``): schedules, chat index."""
        skipped = self.schedules.skipped() if self.schedules is not None else []
        chats = self._registry.store.chats.skipped()
        jobs = self._processes.skipped() if self._processes is not None else []
        return (
            ({"schedules": skipped} if skipped else {})
            | ({"chat_index": chats} if chats else {})
            | ({"processes": jobs} if jobs else {})  # background job files
        )

    def webhooks(self) -> dict[str, WebhookReceiver]:
        """The webhook paths chat gateways receive updates on (served by HTTP)."""
        return dict(gw.webhook for gw in self._gateways.values() if gw.webhook is not None)

    def extra_tools(self, agent: Agent, session_id: str) -> list[Tool]:
        """``background_process`` and ``schedule`` for agents that list them.

        ``schedule`` is not offered in a scheduled task's own turn.
        """
        listed = {t.name for t in agent.spec.tools if t.type == "builtin"}
        quotas = access_of(agent.spec.access).quotas
        tools: list[Tool] = []
        if "background_process" in listed and self._processes is not None:
            tools.append(BackgroundProcessTool(self._processes, self._chat_pair, quotas))
        schedules = self.schedules
        if schedules is None or "schedule" not in listed:
            return tools
        if schedules.chat is not None and session_id in schedules.chat.task_sessions:
            return tools
        return [*tools, ScheduleTool(schedules, self._chat_of, quotas)]

    async def _chat_pair(self, session_id: str) -> tuple[str, str] | None:
        chat = await self._chat_of(session_id)
        return (chat.gateway, chat.chat_id) if chat is not None else None

    def _unlink(self, process_handle: str, agent: str) -> list[str]:
        """Cancel the schedules linked to a background job that ended (scheduler running)."""
        if self.schedules is None:
            return []
        return self.schedules.cancel_linked(process_handle, agent=agent)

    async def _chat_of(self, session_id: str) -> Destination | None:
        info = await self._registry.handle(session_id).info()
        if info.gateway and info.gateway_chat_id:
            return Destination(info.gateway, info.gateway_chat_id)
        return None
