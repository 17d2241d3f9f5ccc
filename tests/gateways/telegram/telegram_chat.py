"""The chat contract's ``ChatDriver`` over Telegram: the real gateway, the fake Bot API server.

``tests/frontkit/contract_chat.py`` and ``contract_approvals.py`` describe what every chat
adapter does in the kit's terms (``InboundMessage``, ``ButtonPress``). This driver turns each
into the Telegram update a user's action produces, pushes it into ``FakeTelegram``, and lets
the real gateway (``build_telegram_gateway``: python-telegram-bot, long polling, the kit's
pipeline and queues) receive it; what the bot did is read back from the calls the fake
recorded. The gateway is assembled here rather than through a ``Runtime`` because the
approval suite gives the agent an in-process tool (``ChatSetup.tools``), as the memory
adapter does.

How the kit's values map to Telegram:

- a sender's ``display_name`` is the user's ``first_name`` (empty when ``None``: the kit then
  labels the user by username or id, as the contract expects);
- ``mentions_bot`` is a ``text_mention`` entity of the bot on the first character, so the text
  the model reads is the same; a message without text cannot mention anyone on Telegram, so
  there it is a reply to one of the bot's messages (the other way to address the bot);
- a photo is ``PHOTO`` in the sizes Telegram sends, each downloadable from the fake;
- the kit's message ids (``p17``) become Telegram ids from 100,000 up, far from the ids the
  fake gives the bot's messages; the same kit id is the same Telegram message (redelivery);
- a press of a button the bot has since edited away is a stale press (still on the user's
  screen: a double tap); a press on a message the bot never sent (an id from an earlier life)
  first plants that message through the Bot API, as the bot would have sent it.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from duragent.agents import load_catalog
from duragent.config.workspace import RouteConfig, TelegramConfig
from duragent.frontkit import ButtonPress, ChatRef, InboundMessage, Sender
from duragent.gateways.telegram import TelegramGateway, build_telegram_gateway
from duragent.gateways.telegram.render import APPROVAL_HEADER
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.llm import RetryPolicy
from duragent.session import RegistrySettings, SessionRegistry
from duragent.store import SessionStore
from duragent.testing import FakeTelegram, ScriptedLLMServer
from duragent.testing.telegram_calls import RecordedCall
from duragent.testing.telegram_objects import sticker_object
from duragent.tools.base import Tool
from duragent.turns import TurnRunner
from duragent.turns.providers import ProviderPool
from tests.frontkit.chat_contract_kit import ChatSetup, run_scheduled_task
from tests.frontkit.memory_chat import BOT_USERNAME, PHOTO, agent_yaml
from tests.gateways.telegram.rig import TOKEN
from tests.polling import eventually

FIRST_USER_MESSAGE_ID = 100_000


def _user(sender: Sender) -> dict[str, Any]:
    user: dict[str, Any] = {
        "id": int(sender.id),
        "is_bot": False,
        "first_name": sender.display_name or "",
    }
    if sender.username:
        user["username"] = sender.username
    return user


def _reply_markup(call: RecordedCall) -> dict[str, Any] | None:
    markup = call.params.get("reply_markup")
    if isinstance(markup, str):
        markup = json.loads(markup)
    return markup if isinstance(markup, dict) else None


class TelegramChat:
    """A ``ChatDriver`` over the Telegram gateway (see module docstring)."""

    bot_username = BOT_USERNAME
    quotes_in_direct_messages = False
    presses_at_once = False

    def __init__(
        self, root: Path, llm: ScriptedLLMServer, tg: FakeTelegram, setup: ChatSetup
    ) -> None:
        self.llm = llm
        self.tg = tg
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
        self.config = TelegramConfig(bot_token=TOKEN, base_url=tg.url, poll_timeout_seconds=1)
        self._message_ids: dict[str, int] = {}
        self._kit_ids: dict[int, str] = {}
        self._updates: dict[str, dict[str, Any]] = {}
        self._next_id = itertools.count(FIRST_USER_MESSAGE_ID)

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
        self.gateway: TelegramGateway = build_telegram_gateway(
            self.config, runner, self.tasks, catalog=lambda: self.catalog, routes=self.routes
        )
        await self.gateway.start()

    async def stop(self) -> None:
        await self.gateway.stop()
        await self.tasks.stop()
        await self.registry.aclose()

    # --- what users do ------------------------------------------------------------------

    async def message(self, msg: InboundMessage) -> None:
        payload = self._updates.get(msg.message_id)
        if payload is None:
            payload = self._message_payload(msg)
            self._updates[msg.message_id] = payload
        await self._confirmed(self.tg.push_update("message", payload))

    async def press(self, press: ButtonPress) -> None:
        chat_id = int(press.chat_id)
        message_id = int(press.message_id) if press.message_id.isdigit() else None
        if message_id is None or self.tg.message(chat_id, message_id) is None:
            message_id = await self._plant_message_with_button(chat_id, press.data)
        update = self.tg.push_callback_query(
            chat_id,
            message_id,
            data=press.data,
            user_id=int(press.sender.id),
            username=press.sender.username,
            first_name=press.sender.display_name,
            stale=self._had_button(chat_id, message_id, press.data),
        )
        await self._confirmed(update)

    async def settle(self) -> None:
        assert await eventually(lambda: not self.tg.pending_updates()), "updates left pending"
        assert await eventually(lambda: len(self.tasks) == 0), "background work did not end"

    async def scheduled_task(self, chat: ChatRef, task: str) -> None:
        await run_scheduled_task(self.runner, self.gateway.outbound, chat, task)

    async def restart(self) -> None:
        await self.settle()
        await self.stop()
        await self.start()

    # --- what the bot did ---------------------------------------------------------------

    def _sent(self, chat: ChatRef) -> list[RecordedCall]:
        return [c for c in self.tg.calls("sendMessage", chat_id=chat.chat_id) if c.ok]

    def texts(self, chat: ChatRef) -> list[str]:
        return [_text(c) for c in self._sent(chat) if _reply_markup(c) is None]

    def toasts(self) -> list[str]:
        calls = self.tg.calls("answerCallbackQuery")
        return [str(c.params.get("text", "")) for c in calls if c.ok]

    def edits(self, chat: ChatRef) -> list[str]:
        calls = self.tg.calls("editMessageText", chat_id=chat.chat_id)
        return [_text(c) for c in calls if c.ok]

    def approval(self, chat: ChatRef) -> tuple[str, str, tuple[str, ...]]:
        asked = [(c, m) for c in self._sent(chat) if (m := _reply_markup(c)) is not None]
        assert asked, "no approval was asked"
        call, markup = asked[-1]
        command = _text(call).removeprefix(f"{APPROVAL_HEADER}\n")
        data = tuple(b["callback_data"] for row in markup["inline_keyboard"] for b in row)
        assert call.answer is not None
        return str(call.answer["result"]["message_id"]), command, data

    def replies_to(self, chat: ChatRef) -> list[str | None]:
        found: list[str | None] = []
        for call in self._sent(chat):
            if _reply_markup(call) is not None:
                continue
            reply = call.params.get("reply_parameters")
            if isinstance(reply, str):
                reply = json.loads(reply)
            target = reply.get("message_id") if isinstance(reply, dict) else None
            found.append(None if target is None else self._kit_ids.get(int(target), str(target)))
        return found

    # --- building updates ---------------------------------------------------------------

    def _message_payload(self, msg: InboundMessage) -> dict[str, Any]:
        message_id = next(self._next_id)
        self._message_ids[msg.message_id] = message_id
        self._kit_ids[message_id] = msg.message_id
        chat_id = int(msg.chat_id)
        chat: dict[str, Any] = (
            {"id": chat_id, "type": "private", "first_name": msg.sender.display_name or "user"}
            if msg.chat_type == "dm"
            else {"id": chat_id, "type": "supergroup", "title": "Contract group"}
        )
        payload: dict[str, Any] = {
            "message_id": message_id,
            "date": 1_700_000_000,
            "chat": chat,
            "from": _user(msg.sender),
        }
        mention = [{"type": "text_mention", "offset": 0, "length": 1, "user": self._bot()}]
        if msg.content_kind == "text":
            payload["text"] = msg.text or ""
            if msg.mentions_bot:
                payload["entities"] = mention
        else:
            file_id = f"file-{message_id}"
            if msg.content_kind == "photo":
                payload["photo"] = self._stored_photo(chat_id)
            elif msg.content_kind == "sticker":
                payload["sticker"] = sticker_object(file_id, "🙂")
            else:
                raise ValueError(f"the driver cannot send a {msg.content_kind} yet")
            if msg.text is not None:
                payload["caption"] = msg.text
                if msg.mentions_bot and msg.text:
                    payload["caption_entities"] = mention
        addressed_without_text = msg.mentions_bot and not msg.text
        if msg.reply_to_bot or addressed_without_text:
            payload["reply_to_message"] = {
                "message_id": message_id - 1,
                "date": 1_700_000_000,
                "chat": chat,
                "from": self._bot(),
                "text": "an earlier answer",
            }
        return payload

    def _bot(self) -> dict[str, Any]:
        return dict(self.tg.bot)

    def _stored_photo(self, chat_id: int) -> list[dict[str, Any]]:
        """``PHOTO``'s sizes, kept by the fake as a pushed photo's are (so they download).

        The driver builds its own updates (its ids, mentions, replies), so it asks the fake
        for the photo part alone.
        """
        with self.tg._lock:
            return self.tg._photo(chat_id, PHOTO, None, None, ())

    async def _confirmed(self, update: dict[str, Any]) -> None:
        """Wait until the gateway confirmed ``update`` (it is recorded, or dropped)."""
        update_id = update["update_id"]
        assert await eventually(
            lambda: all(u["update_id"] != update_id for u in self.tg.pending_updates())
        ), f"update {update_id} was never confirmed"

    def _had_button(self, chat_id: int, message_id: int, data: str) -> bool:
        """The bot once sent the message with this button (it may have edited it away since)."""
        for call in self.tg.calls("sendMessage", chat_id=chat_id):
            markup = _reply_markup(call)
            if call.answer and call.ok and call.answer["result"]["message_id"] == message_id:
                rows = markup["inline_keyboard"] if markup else []
                return any(b.get("callback_data") == data for row in rows for b in row)
        return False

    async def _plant_message_with_button(self, chat_id: int, data: str) -> int:
        """A message with one button, sent through the Bot API as the bot once sent it."""
        keyboard = {"inline_keyboard": [[{"text": "old button", "callback_data": data}]]}
        async with httpx.AsyncClient() as client:
            answer = await client.post(
                f"{self.tg.base_url}{TOKEN}/sendMessage",
                json={"chat_id": chat_id, "text": "an old prompt", "reply_markup": keyboard},
            )
        result: dict[str, Any] = answer.json()["result"]
        return int(result["message_id"])


def _text(call: RecordedCall) -> str:
    assert call.answer is not None
    return str(call.answer["result"]["text"])


@asynccontextmanager
async def telegram_chat(root: Path, setup: ChatSetup) -> AsyncIterator[TelegramChat]:
    async with (
        ScriptedLLMServer() as llm,
        FakeTelegram(token=TOKEN, bot_username=BOT_USERNAME) as tg,
    ):
        driver = TelegramChat(root, llm, tg, setup)
        await driver.start()
        try:
            yield driver
        finally:
            await driver.stop()
            await driver.providers.aclose()
