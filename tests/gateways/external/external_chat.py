"""The chat contract's ``ChatDriver`` over an external gateway: a real child process, the protocol.

``contract_chat`` and ``contract_approvals`` speak the kit's values; this driver writes each
as the event a gateway plugin would (``message_received``, ``callback_query``) through the
fake gateway child (``duragent.testing.fake_gateway``), and reads what the bot did from the
commands duragent wrote to the child (``send_message``, ``edit_message``,
``answer_callback_query``). The gateway is named ``telegram`` in its config, which is what the
contract's chats are called (``chat_contract_kit.GATEWAY``): an external gateway's name is
whatever ``duragent.yaml`` says, and the reference's own Telegram gateway can run this way.

How the kit's values map to the protocol: a text message is ``text`` content; a photo or
sticker is ``media`` content with that ``media_type`` and the text as its caption (a photo's
``url`` is ``PHOTO`` on a ``MediaFileServer`` the driver runs); the chat
type, mention and reply-to-bot flags are the event's own fields. The fake confirms each
``send_message`` with ``message_id`` ``g1``, ``g2``… per child, which is how the driver knows
the approval message's id. The fake says the bot's name in ``ready`` (``bot_username``, our
optional extension), so ``/status@duragent_bot`` is a command.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from duragent.agents import load_catalog
from duragent.config.workspace import ExternalGatewayConfig, RouteConfig
from duragent.frontkit import (
    ButtonPress,
    ChatRef,
    InboundMessage,
    MediaSettings,
    approval_prompt,
)
from duragent.gateways.external import ExternalGateway, Timings, build_external_gateway
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.llm import RetryPolicy
from duragent.session import RegistrySettings, SessionRegistry
from duragent.store import SessionStore
from duragent.testing import Responder, ScriptedLLMServer
from duragent.testing._gateway_files import MediaFileServer
from duragent.testing.gateway_control import FakeChild, GatewayControl
from duragent.tools.base import Tool
from duragent.turns import TurnRunner
from duragent.turns.providers import ProviderPool
from tests.frontkit.chat_contract_kit import GATEWAY, ChatSetup, run_scheduled_task
from tests.frontkit.memory_chat import BOT_USERNAME, PHOTO, agent_yaml
from tests.polling import eventually

FAST = Timings(initial_backoff=0.01, max_backoff=0.05, grace=2.0, ack_timeout=5.0)
PROMPT_HEAD, PROMPT_TAIL = approval_prompt("\0").split("\0")


def event_of(msg: InboundMessage, url: str | None = None) -> dict[str, Any]:
    """``msg`` as the ``message_received`` event a gateway writes (``url``: its file's)."""
    if msg.content_kind == "text":
        content: dict[str, Any] = {"type": "text", "text": msg.text or ""}
    else:
        content = {"type": "media", "media_type": msg.content_kind}
        if url is not None:
            content["url"] = url
        if msg.text is not None:
            content["caption"] = msg.text
    sender = {"id": msg.sender.id, "username": msg.sender.username}
    if msg.sender.display_name is not None:
        sender["display_name"] = msg.sender.display_name
    return {
        "type": "message_received",
        "message_id": msg.message_id,
        "chat_id": msg.chat_id,
        "sender": {k: v for k, v in sender.items() if v is not None},
        "content": content,
        "routing": {
            "channel": "fake",
            "chat_type": msg.chat_type,
            "chat_id": msg.chat_id,
            "sender_id": msg.sender.id,
        },
        "mentions_bot": msg.mentions_bot,
        "reply_to_bot": msg.reply_to_bot,
    }


def press_event(press: ButtonPress) -> dict[str, Any]:
    """``press`` as the ``callback_query`` event a gateway writes."""
    return {
        "type": "callback_query",
        "callback_query_id": press.callback_id,
        "chat_id": press.chat_id,
        "sender": {"id": press.sender.id},
        "message_id": press.message_id,
        "data": press.data,
    }


class ExternalChat:
    """A ``ChatDriver`` over an external gateway (see module docstring)."""

    bot_username = BOT_USERNAME
    quotes_in_direct_messages = True
    presses_at_once = False

    def __init__(
        self,
        root: Path,
        llm: ScriptedLLMServer,
        control: GatewayControl,
        setup: ChatSetup,
        *options: str,
        timings: Timings = FAST,
        files: MediaFileServer | None = None,
        media: MediaSettings | None = None,
    ) -> None:
        self.files = files
        self.media = media
        """Where a photo's bytes are served (None: a photo is sent without a link)."""
        self.llm = llm
        self.control = control
        self.setup = setup
        self.root = root
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
        self.config = ExternalGatewayConfig(name=GATEWAY, **control.command(*options))
        self.timings = timings
        self.emitted = 0
        self._handled_before = 0

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
        )
        self.tasks = BackgroundTasks(grace_seconds=2)
        self.gateway: ExternalGateway = build_external_gateway(
            self.config,
            0,
            self.root,
            runner,
            self.tasks,
            catalog=lambda: self.catalog,
            routes=self.routes,
            timings=self.timings,
            media=self.media,
        )
        self.emitted = 0
        index = len(self.control.children)
        await self.gateway.start()
        self.child = await self.control.child(index)

    async def stop(self) -> None:
        await self.gateway.stop()
        await self.tasks.stop()
        await self.registry.aclose()

    # --- what users do ------------------------------------------------------------------

    async def emit(self, event: dict[str, Any]) -> None:
        """Write ``event`` as the current child, and wait until the chat front took it."""
        self.emitted += 1
        await self.child.emit(event)
        wanted = self.emitted
        assert await eventually(lambda: self.gateway.handled >= wanted), "event never taken"

    async def message(self, msg: InboundMessage) -> None:
        url = None
        if msg.content_kind == "photo" and self.files is not None:
            url = self.files.add(PHOTO, "photo.png")
        await self.emit(event_of(msg, url))

    async def press(self, press: ButtonPress) -> None:
        await self.emit(press_event(press))

    async def settle(self) -> None:
        assert await eventually(lambda: len(self.tasks) == 0), "background work did not end"

    async def scheduled_task(self, chat: ChatRef, task: str) -> None:
        await run_scheduled_task(self.runner, self.gateway.outbound, chat, task)

    async def restart(self) -> None:
        await self.settle()
        await self.stop()
        await self.start()

    # --- what the bot did ---------------------------------------------------------------

    def _sent(self, chat: ChatRef) -> list[tuple[FakeChild, int, dict[str, Any]]]:
        """Every ``send_message`` to ``chat``: (child, its number in that child, the command)."""
        found = []
        for child in self.control.children:
            sends = [c for c in child.commands if c["type"] in ("send_message", "send_media")]
            for n, command in enumerate(sends, start=1):
                if command.get("chat_id") == chat.chat_id:
                    found.append((child, n, command))
        return found

    def texts(self, chat: ChatRef) -> list[str]:
        return [c["content"] for _, _, c in self._sent(chat) if "inline_keyboard" not in c]

    def toasts(self) -> list[str]:
        return [
            c.get("text", "")
            for child in self.control.children
            for c in child.of_type("answer_callback_query")
        ]

    def edits(self, chat: ChatRef) -> list[str]:
        return [
            c["content"]
            for child in self.control.children
            for c in child.of_type("edit_message")
            if c["chat_id"] == chat.chat_id
        ]

    def approval(self, chat: ChatRef) -> tuple[str, str, tuple[str, ...]]:
        asked = [(n, c) for _, n, c in self._sent(chat) if "inline_keyboard" in c]
        assert asked, "no approval was asked"
        n, command = asked[-1]
        text = str(command["content"])
        assert text.startswith(PROMPT_HEAD), text
        assert text.endswith(PROMPT_TAIL), text
        rows = command["inline_keyboard"]["rows"]
        data = tuple(b["callback_data"] for row in rows for b in row)
        return f"g{n}", text[len(PROMPT_HEAD) : -len(PROMPT_TAIL)], data

    def replies_to(self, chat: ChatRef) -> list[str | None]:
        return [c.get("reply_to") for _, _, c in self._sent(chat) if "inline_keyboard" not in c]


@asynccontextmanager
async def external_chat(
    root: Path,
    setup: ChatSetup,
    *options: str,
    timings: Timings = FAST,
    responder: Responder | None = None,
    media: Callable[[ScriptedLLMServer], MediaSettings] | None = None,
) -> AsyncIterator[ExternalChat]:
    """The driver over a fake gateway child (``options``: the fake's), named as the contract's
    chats are, telling its bot name in ``ready`` as a gateway may; ``media(llm)``: how files
    are taken in (it may transcribe with ``llm``)."""
    options = ("--bot-username", BOT_USERNAME, *options)
    async with (
        ScriptedLLMServer(responder=responder) as llm,
        GatewayControl() as control,
        MediaFileServer() as files,
    ):
        settings = None if media is None else media(llm)
        driver = ExternalChat(
            root, llm, control, setup, *options, timings=timings, files=files, media=settings
        )
        await driver.start()
        try:
            yield driver
        finally:
            await driver.stop()
            await driver.providers.aclose()
