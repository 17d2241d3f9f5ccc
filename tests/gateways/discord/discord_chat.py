"""The chat contract's ``ChatDriver`` over Discord: the real gateway, the fake Discord server.

Each kit value becomes what a user's action produces on Discord, pushed through
``FakeDiscord``'s websocket to a real ``discord.Client`` (``build_discord_gateway``: login,
gateway, the view store's buttons, the kit's pipeline and queues); what the bot did is read
back from the REST calls the fake recorded. Assembled without a ``Runtime`` because the
approval suite gives the agent an in-process tool (``ChatSetup.tools``).

How the kit's values map to Discord:

- the DM is a DM channel with the kit's id; the group is a guild text channel (``100200``:
  Discord ids are positive), announced in the guild the fake sends at READY;
- a sender's ``display_name`` is the user's ``global_name``; a sender without a username gets
  an empty one (every Discord user has one; the gateway then labels by id, as the kit does);
- ``mentions_bot`` is ``<@bot>`` at the start of the text and the bot in ``mentions`` (the
  gateway drops its own leading mention, so the model reads the same text); ``reply_to_bot``
  is a reply to a message the bot sent earlier;
- a photo is ``PHOTO`` attached (served by the fake's CDN), a sticker a sticker item, the
  text its caption;
- the same kit message id is the same Discord message, dispatched again (a redelivery);
- a press on a message the bot has since edited carries the message as first sent (still on
  the user's screen: a double tap); a press on a message from an earlier life (an id the fake
  never saw) first plants that message, as the bot would have sent it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from duragent.agents import load_catalog
from duragent.config.workspace import DiscordConfig, RouteConfig
from duragent.frontkit import ButtonPress, ChatRef, InboundMessage, MediaSettings, Sender
from duragent.gateways.discord import DiscordGateway, build_discord_gateway
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.llm import RetryPolicy
from duragent.observability.metrics import Metrics
from duragent.session import RegistrySettings, SessionRegistry
from duragent.store import SessionStore
from duragent.testing import FakeDiscord, ScriptedLLMServer
from duragent.testing.discord_objects import Person
from duragent.tools.base import Tool
from duragent.turns import TurnRunner
from duragent.turns.providers import ProviderPool
from tests.frontkit.chat_contract_kit import ChatSetup, Platform, run_scheduled_task
from tests.frontkit.memory_chat import BOT_USERNAME, PHOTO, agent_yaml
from tests.polling import eventually

GROUP_ID = "100200"
PLATFORM = Platform(gateway="discord", other_gateway="telegram", group_id=GROUP_ID)
PROMPT_HEAD = "Command requires approval:\n```\n"


def person(sender: Sender) -> Person:
    return Person(int(sender.id), sender.username or "", global_name=sender.display_name)


class DiscordChat:
    """A ``ChatDriver`` over the Discord gateway (see module docstring)."""

    bot_username = BOT_USERNAME
    quotes_in_direct_messages = True
    presses_at_once = True

    def __init__(
        self,
        root: Path,
        llm: ScriptedLLMServer,
        dc: FakeDiscord,
        setup: ChatSetup,
        metrics: Metrics | None = None,
        media: MediaSettings | None = None,
    ) -> None:
        self.metrics = metrics
        self.media = media
        self.llm = llm
        self.dc = dc
        self.setup = setup
        self.workspace = root / ".duragent"
        for name in setup.agents:
            agent_dir = self.workspace / "agents" / name
            agent_dir.mkdir(parents=True, exist_ok=True)
            (agent_dir / "agent.yaml").write_text(
                agent_yaml(name, llm.openai_base_url, setup.access)
            )
            if setup.policy is not None:
                (agent_dir / "policy.yaml").write_text(setup.policy)
        self.catalog = load_catalog(self.workspace / "agents")
        assert not self.catalog.broken, self.catalog.broken
        self.routes = [RouteConfig.model_validate(r) for r in setup.routes]
        self.providers = ProviderPool(policy=RetryPolicy(initial_delay=0.01, max_delay=0.05))
        self.config = DiscordConfig(bot_token=dc.token, base_url=dc.url)
        self._ids: dict[str, int] = {}
        self._kit_ids: dict[int, str] = {}
        self._pushed = 0

    async def start(self) -> None:
        self.registry = SessionRegistry(
            SessionStore(self.workspace / "sessions"), RegistrySettings(ask_timeout=20)
        )
        await self.registry.open()
        tools: Sequence[Tool] = self.setup.tools
        self.runner = runner = TurnRunner(
            self.registry,
            agents=lambda: self.catalog,
            providers=self.providers,
            workspace_dir=self.workspace,
            world_memory_dir=self.workspace / "memory" / "world",
            policy_file=self.workspace / "policy.yaml",
            extra_tools=lambda agent, sid: tools,
            metrics=self.metrics,
        )
        self.tasks = BackgroundTasks(grace_seconds=2)
        self.gateway: DiscordGateway = build_discord_gateway(
            self.config,
            runner,
            self.tasks,
            catalog=lambda: self.catalog,
            routes=self.routes,
            guild_ready_seconds=0.01,
            media=self.media,
        )
        self._pushed = 0
        await self.gateway.start()

    async def stop(self) -> None:
        await self.gateway.stop()
        await self.tasks.stop()
        await self.registry.aclose()

    # --- what users do ------------------------------------------------------------------

    async def message(self, msg: InboundMessage) -> None:
        channel = int(msg.chat_id)
        known = self._ids.get(msg.message_id)
        if known is not None:
            await self.dc.push_message(channel, "", person(msg.sender), message_id=known)
        else:
            sent = await self.dc.push_message(channel, **self._message_fields(msg))
            self._ids[msg.message_id] = int(sent["id"])
            self._kit_ids[int(sent["id"])] = msg.message_id
        await self._taken()

    async def push(self, channel_id: int, content: str, author: Person, **fields: Any) -> Any:
        """A user writes on Discord (``FakeDiscord.push_message``); returns once it is taken."""
        sent = await self.dc.push_message(channel_id, content, author, **fields)
        await self._taken()
        return sent

    async def press(self, press: ButtonPress) -> None:
        channel = int(press.chat_id)
        found = self.dc.message(int(press.message_id)) if press.message_id.isdigit() else None
        message_id = (
            int(press.message_id)
            if found is not None
            else self.dc.plant_message(channel, "an old prompt", [press.data])
        )
        now = self.dc.message(message_id) or {}
        shown = any(
            b.get("custom_id") == press.data
            for row in now.get("components", [])
            for b in row.get("components", [])
        )
        await self.dc.press(message_id, press.data, person(press.sender), as_first_sent=not shown)
        await self._taken()

    async def _taken(self) -> None:
        self._pushed += 1
        wanted = self._pushed
        assert await eventually(lambda: self.gateway.taken >= wanted), "event never taken"

    async def settle(self) -> None:
        assert await eventually(lambda: self.gateway.taken >= self._pushed), "events left"
        assert await eventually(lambda: len(self.tasks) == 0), "background work did not end"

    async def scheduled_task(self, chat: ChatRef, task: str) -> None:
        await run_scheduled_task(self.runner, self.gateway.outbound, chat, task)

    async def restart(self) -> None:
        await self.settle()
        await self.stop()
        await self.start()

    # --- what the bot did ---------------------------------------------------------------

    def _sent(self, chat: ChatRef) -> list[dict[str, Any]]:
        return self.dc.sent(int(chat.chat_id))

    def texts(self, chat: ChatRef) -> list[str]:
        return [str(m["content"]) for m in self._sent(chat) if not m["components"]]

    def toasts(self) -> list[str]:
        return [
            str((a.get("data") or {}).get("content", "")) for a in self.dc.interaction_answers()
        ]

    def edits(self, chat: ChatRef) -> list[str]:
        return [str(e.get("content", "")) for e in self.dc.edits(int(chat.chat_id))]

    def approval(self, chat: ChatRef) -> tuple[str, str, tuple[str, ...]]:
        asked = [m for m in self._sent(chat) if m["components"]]
        assert asked, "no approval was asked"
        message = asked[-1]
        command = str(message["content"]).removeprefix(PROMPT_HEAD).removesuffix("\n```")
        ids = tuple(b["custom_id"] for row in message["components"] for b in row["components"])
        return str(message["id"]), command, ids

    def replies_to(self, chat: ChatRef) -> list[str | None]:
        found: list[str | None] = []
        for message in self._sent(chat):
            if message["components"]:
                continue
            target = (message.get("message_reference") or {}).get("message_id")
            found.append(None if target is None else self._kit_ids.get(int(target), target))
        return found

    # --- building messages --------------------------------------------------------------

    def _message_fields(self, msg: InboundMessage) -> dict[str, Any]:
        text = msg.text or ""
        fields: dict[str, Any] = {"content": text, "author": person(msg.sender)}
        if msg.mentions_bot:
            fields["content"] = f"<@{self.dc.bot.id}> {text}".rstrip()
            fields["mentions"] = [self.dc.bot]
        if msg.reply_to_bot:
            fields["reply_to"] = self.dc.plant_message(int(msg.chat_id), "an earlier answer", [])
        if msg.content_kind == "photo":
            fields["attachments"] = [self.dc.attachment(PHOTO, "photo.png")]
        elif msg.content_kind == "sticker":
            fields["stickers"] = [{"id": "77", "name": "smile", "format_type": 1}]
        elif msg.content_kind != "text":
            raise ValueError(f"the driver cannot send a {msg.content_kind} yet")
        return fields


@asynccontextmanager
async def discord_chat(
    root: Path,
    setup: ChatSetup,
    metrics: Metrics | None = None,
    media: Callable[[ScriptedLLMServer], MediaSettings] | None = None,
) -> AsyncIterator[DiscordChat]:
    """The driver; ``media(llm)``: how files are taken in (it may transcribe with ``llm``)."""
    async with ScriptedLLMServer() as llm, FakeDiscord(bot_username=BOT_USERNAME) as dc:
        await dc.add_channel(int(GROUP_ID))
        driver = DiscordChat(root, llm, dc, setup, metrics, None if media is None else media(llm))
        await driver.start()
        try:
            yield driver
        finally:
            await driver.stop()
            await driver.providers.aclose()
