"""A real ``duragent serve`` with its Telegram front end talking to the fake Bot API server.

The end-to-end tests of the Telegram gateway drive it only through its real surface: a
``Runtime`` on a tmp workspace whose ``gateways.telegram.base_url`` points at ``FakeTelegram``
(real python-telegram-bot over real HTTP), agents whose model is ``ScriptedLLMServer`` (so a
test can script tool calls and read what the model was asked), and the runtime's own HTTP port
(``/readyz``, webhooks). Users act by pushing updates into the fake; assertions read what the
fake was asked to show. ``restart`` stops the runtime and starts a new one on the same
workspace and the same fake, as a crash-free redeploy would.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from duragent.config import load_workspace
from duragent.runtime import Runtime
from duragent.testing import FakeTelegram, RecordedRequest, Reply, ScriptedLLMServer
from duragent.testing._telegram_files import MAX_FILE_SIZE
from duragent.testing.telegram_calls import RecordedCall
from tests.polling import eventually

TOKEN = "123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"
"""Shaped like @BotFather's tokens (the gateway checks the shape before any call)."""
BOT = "duragent_test_bot"
POLLING = frozenset(
    {"getUpdates", "getMe", "deleteWebhook", "setWebhook", "setMyCommands", "deleteMyCommands"}
)
"""Calls that are not about any message (receiving updates, who the bot is, its menu)."""

BASH_TOOL = [{"type": "builtin", "name": "bash"}]
ASK_POLICY = "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: ask\n"


def echo_reply(request: RecordedRequest) -> Reply:
    """The model's answer once its script runs out: it repeats the user's last message."""
    users = [m for m in request.json.get("messages", []) if m.get("role") == "user"]
    content = users[-1]["content"] if users else ""
    return Reply(text=f"re: {content}")


def agent_yaml(base_url: str, access: dict[str, Any] | None, tools: list[Any]) -> str:
    spec: dict[str, Any] = {
        "model": {
            "provider": "fake",
            "name": "gpt-4o",
            "base_url": base_url,
            "max_input_tokens": 32000,
            "max_output_tokens": 1000,
        },
        "session": {"on_disconnect": "pause", "llm_timeout_seconds": 20},
    }
    if access is not None:
        spec["access"] = access
    if tools:
        spec["tools"] = tools
    document = {"apiVersion": "duragent/v1alpha1", "kind": "Agent", "metadata": {"name": "bot"}}
    return json.dumps({**document, "spec": spec})  # JSON is YAML


@dataclass
class Rig:
    """The fake Telegram, the scripted model, and the runtime serving between them."""

    tg: FakeTelegram
    llm: ScriptedLLMServer
    root: Path
    runtime: Runtime
    http: httpx.AsyncClient

    async def restart(self) -> None:
        """Stop the runtime; start a new one on the same workspace and the same fake."""
        await self.http.aclose()
        await self.runtime.aclose()
        self.runtime, self.http = await _start_runtime(self.root)

    async def delivered(self, update: dict[str, Any]) -> None:
        """Wait until the gateway confirmed ``update`` to Telegram (recorded or dropped)."""
        update_id = update["update_id"]
        assert await eventually(
            lambda: all(u["update_id"] != update_id for u in self.tg.pending_updates())
        ), f"update {update_id} was never confirmed"

    async def settle(self) -> None:
        """Wait until every update was confirmed and every turn it started has delivered."""
        assert await eventually(lambda: not self.tg.pending_updates()), "updates left pending"
        assert await eventually(lambda: len(self.runtime.tasks) == 0), "turns did not end"

    async def replies(self, chat_id: int, count: int = 1) -> list[str]:
        """The texts delivered to ``chat_id``, once there are at least ``count``."""
        assert await eventually(lambda: len(self.tg.sent_messages(chat_id)) >= count), (
            f"chat {chat_id} got {self.tg.sent_messages(chat_id)}, expected {count} message(s)"
        )
        return self.tg.sent_messages(chat_id)

    def message_calls(self, chat_id: int | None = None) -> list[RecordedCall]:
        """Every Bot API call about messages (not polling), optionally into one chat."""
        calls = self.tg.calls(chat_id=chat_id)
        return [c for c in calls if c.method not in POLLING]

    async def is_ready(self) -> bool:
        """``/readyz`` answers 200 (the model providers have loaded, storage is writable)."""
        return (await self.http.get("/readyz")).status_code == 200

    async def readyz(self) -> dict[str, Any]:
        answer = await self.http.get("/readyz")
        body: dict[str, Any] = answer.json()
        return body


def write_workspace(
    root: Path,
    *,
    llm_url: str,
    telegram: dict[str, Any],
    access: dict[str, Any] | None = None,
    routes: list[dict[str, Any]] | None = None,
    tools: list[Any] | None = None,
    policy: str | None = None,
    media: dict[str, Any] | None = None,
) -> None:
    config: dict[str, Any] = {"server": {"host": "127.0.0.1"}, "gateways": {"telegram": telegram}}
    if routes:
        config["routes"] = routes
    if media is not None:
        config["media"] = media
    (root / "duragent.yaml").write_text(json.dumps(config))
    agent = root / ".duragent" / "agents" / "bot"
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "agent.yaml").write_text(agent_yaml(llm_url, access, tools or []))
    if policy is not None:
        (agent / "policy.yaml").write_text(policy)


def _with_llm(media: dict[str, Any] | None, llm_url: str) -> dict[str, Any] | None:
    """``media`` with a transcription ``base_url`` of ``"<llm>"`` pointed at ``llm_url``."""
    if media is None or "transcription" not in media:
        return media
    spoken = dict(media["transcription"])
    if spoken.get("base_url") == "<llm>":
        spoken["base_url"] = llm_url
    return {**media, "transcription": spoken}


async def _start_runtime(root: Path) -> tuple[Runtime, httpx.AsyncClient]:
    runtime = Runtime(load_workspace(root), port=0)
    await runtime.start()
    client = httpx.AsyncClient(base_url=f"http://127.0.0.1:{runtime.http_port}", timeout=120)
    return runtime, client


@asynccontextmanager
async def telegram_rig(
    root: Path,
    *,
    token: str = TOKEN,
    fake_token: str | None = None,
    access: dict[str, Any] | None = None,
    routes: list[dict[str, Any]] | None = None,
    tools: list[Any] | None = None,
    policy: str | None = None,
    media: dict[str, Any] | None = None,
    file_size_limit: int | None = None,
    **telegram: Any,
) -> AsyncIterator[Rig]:
    """Serve a workspace whose one agent ``bot`` answers Telegram (extra ``gateways.telegram``
    fields as keywords); the fake accepts ``fake_token`` (default: the configured token).

    ``media``: the ``media:`` section (a ``transcription.base_url`` of ``"<llm>"`` is the
    scripted model server's); ``file_size_limit``: the largest file the fake lets the bot
    download (Telegram's 20 MB by default).
    """
    limit = MAX_FILE_SIZE if file_size_limit is None else file_size_limit
    async with (
        FakeTelegram(token=fake_token or token, bot_username=BOT, file_size_limit=limit) as tg,
        ScriptedLLMServer(responder=echo_reply) as llm,
    ):
        section = {"bot_token": token, "base_url": tg.url, "poll_timeout_seconds": 1, **telegram}
        write_workspace(
            root,
            llm_url=llm.openai_base_url,
            telegram=section,
            access=access,
            routes=routes,
            tools=tools,
            policy=policy,
            media=_with_llm(media, llm.openai_base_url),
        )
        runtime, client = await _start_runtime(root)
        rig = Rig(tg, llm, root, runtime, client)
        try:
            yield rig
        finally:
            await rig.http.aclose()
            await rig.runtime.aclose()


def assert_never_logged(caplog: pytest.LogCaptureFixture, secret: str = TOKEN) -> None:
    """No captured log record (message or traceback) contains ``secret``."""
    assert caplog.records, "nothing was logged: the check would prove nothing"
    for record in caplog.records:
        assert secret not in record.getMessage(), record.getMessage()
        assert secret not in (record.exc_text or ""), record.exc_text
    assert secret not in caplog.text


def log_everything(caplog: pytest.LogCaptureFixture) -> None:
    """Capture every record, down to DEBUG (the Bot API transport included)."""
    caplog.set_level(logging.DEBUG)
