"""The "memory adapter" of the chat contract suite: ``ChatFront`` + ``MemoryOutbound``.

``contract_chat`` drives a chat adapter through ``ChatDriver``; this is the driver with no
platform at all (the kit's pipeline, a real session registry on a tmp dir, the scripted LLM
over HTTP, the production chat queue through ``DirectDispatcher``, files taken in from memory:
a ``photo`` carries ``PHOTO``). A platform adapter's
driver (Telegram over the fake Bot API server, later Discord) implements the same methods by
sending real updates and reading what the platform was asked to show.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from duragent.agents import load_catalog
from duragent.config.workspace import RouteConfig
from duragent.core.attachments import AttachmentKind
from duragent.frontkit import (
    ButtonPress,
    ChatFront,
    ChatRef,
    ChatTurns,
    InboundMessage,
    MediaIntake,
    MediaRef,
    MediaSettings,
    MemoryOutbound,
    Router,
    approval_buttons,
)
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.llm import RetryPolicy
from duragent.session import RegistrySettings, SessionRegistry
from duragent.store import SessionStore
from duragent.testing import ScriptedLLMServer
from duragent.tools.base import Tool
from duragent.turns import TurnRunner
from duragent.turns.providers import ProviderPool
from tests.frontkit.chat_contract_kit import ChatSetup, run_scheduled_task
from tests.frontkit.direct_dispatcher import DirectDispatcher
from tests.frontkit.media_kit import MemorySource, png
from tests.polling import eventually

BOT_USERNAME = "duragent_bot"
PHOTO = png(64, 48)
"""What a contract test's photo shows, on every platform."""


def agent_yaml(name: str, base_url: str, access: dict[str, Any] | None) -> str:
    spec: dict[str, Any] = {
        "model": {
            "provider": "fake",
            "name": "gpt-4o",
            "base_url": base_url,
            "max_input_tokens": 32000,
            "max_output_tokens": 1000,
        },
        "session": {"on_disconnect": "pause"},
    }
    if access is not None:
        spec["access"] = access
    document = {"apiVersion": "duragent/v1alpha1", "kind": "Agent", "metadata": {"name": name}}
    return json.dumps({**document, "spec": spec})  # JSON is YAML


class MemoryChat:
    """A ``ChatDriver`` over the kit alone (see module docstring)."""

    bot_username = BOT_USERNAME
    quotes_in_direct_messages = True
    presses_at_once = True

    def __init__(self, root: Path, llm: ScriptedLLMServer, setup: ChatSetup) -> None:
        self.root = root
        self.llm = llm
        self.setup = setup
        self.outbound = MemoryOutbound()
        workspace = root / ".duragent"
        for name in setup.agents:
            agent_dir = workspace / "agents" / name
            agent_dir.mkdir(parents=True, exist_ok=True)
            (agent_dir / "agent.yaml").write_text(
                agent_yaml(name, llm.openai_base_url, setup.access)
            )
            if setup.policy is not None:
                (agent_dir / "policy.yaml").write_text(setup.policy)
        self.catalog = load_catalog(workspace / "agents")
        assert not self.catalog.broken, self.catalog.broken
        self.routes = [RouteConfig.model_validate(r) for r in setup.routes]
        self.providers = ProviderPool(policy=RetryPolicy(initial_delay=0.01, max_delay=0.05))
        self.files = MemorySource({"photo": PHOTO})

    async def start(self) -> None:
        workspace = self.root / ".duragent"
        self.registry = SessionRegistry(
            SessionStore(workspace / "sessions"), RegistrySettings(ask_timeout=20)
        )
        await self.registry.open()
        tools: Sequence[Tool] = self.setup.tools
        self.runner = TurnRunner(
            self.registry,
            agents=lambda: self.catalog,
            providers=self.providers,
            workspace_dir=workspace,
            world_memory_dir=workspace / "memory" / "world",
            policy_file=workspace / "policy.yaml",
            extra_tools=lambda agent, sid: tools,
        )
        self.tasks = BackgroundTasks(grace_seconds=2)
        chat = ChatTurns(self.runner, self.outbound, self.tasks, typing_every=0.05)
        self.dispatcher = DirectDispatcher(chat)
        self.front = ChatFront(
            chat,
            Router(self.routes, lambda: self.catalog),
            lambda: self.catalog,
            self.dispatcher,
            bot_username=BOT_USERNAME,
            media=MediaIntake(self.runner, self.outbound, self.files, MediaSettings()),
        )

    async def stop(self) -> None:
        await self.tasks.stop()
        await self.registry.aclose()

    # --- the ChatDriver methods ---------------------------------------------------------

    async def message(self, msg: InboundMessage) -> None:
        if msg.content_kind == "photo" and not msg.media:  # a platform says where its bytes are
            msg = replace(msg, media=(MediaRef(AttachmentKind.IMAGE, "photo"),))
        await self.front.message(msg)

    async def press(self, press: ButtonPress) -> None:
        await self.front.press(press)

    async def settle(self) -> None:
        assert await eventually(lambda: len(self.tasks) == 0), "background work did not end"

    async def restart(self) -> None:
        await self.settle()
        await self.stop()
        await self.start()

    async def scheduled_task(self, chat: ChatRef, task: str) -> None:
        await run_scheduled_task(self.runner, self.outbound, chat, task)

    def texts(self, chat: ChatRef) -> list[str]:
        return self.outbound.texts(chat)

    def toasts(self) -> list[str]:
        return [a.text for a in self.outbound.of_kind("toast")]

    def edits(self, chat: ChatRef) -> list[str]:
        return [a.text for a in self.outbound.of_kind("edit") if a.chat == chat]

    def approval(self, chat: ChatRef) -> tuple[str, str, tuple[str, ...]]:
        """The latest approval asked in ``chat``: (its message id, command, button payloads)."""
        asked = [a for a in self.outbound.of_kind("approval") if a.chat == chat]
        assert asked, "no approval was asked"
        last = asked[-1]
        assert last.message_id is not None
        assert last.call_id is not None
        return last.message_id, last.text, tuple(b.data for b in approval_buttons(last.call_id))

    def replies_to(self, chat: ChatRef) -> list[str | None]:
        return [a.reply_to for a in self.outbound.of_kind("text") if a.chat == chat]


@asynccontextmanager
async def memory_chat(root: Path, setup: ChatSetup) -> AsyncIterator[MemoryChat]:
    async with ScriptedLLMServer() as llm:
        driver = MemoryChat(root, llm, setup)
        await driver.start()
        try:
            yield driver
        finally:
            await driver.stop()
            await driver.providers.aclose()
