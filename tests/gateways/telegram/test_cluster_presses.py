"""Two nodes, one bot: an approval pressed on the node that does not serve the chat decides.

Webhook mode (the load balancer hands an update to either node): the chat's session lives on
node a, which asked for approval; the press reaches node b. Node b must hand it to a, as it
hands a chat message, so the requester's decision runs the tool. Before, b looked for the
waiting approval itself, found the session held by a, took that for "nothing is waiting"
and told the requester so: the approval was never decided and the message never answered
(the month of strangers, with two nodes, issue 40).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from duragent.config import load_workspace
from duragent.runtime import Runtime
from duragent.testing import FakeTelegram, Reply, ScriptedLLMServer, ToolCallReply
from tests.gateways.telegram.rig import ASK_POLICY, BASH_TOOL, BOT, TOKEN, write_workspace
from tests.gateways.telegram.test_cluster import HOOK, post, update_json
from tests.polling import eventually

postgres_db = pytest.importorskip("tests.store.postgres_db")

CHAT = 42
RUN_ECHO = Reply(tool_calls=[ToolCallReply(name="bash", arguments={"command": "echo ok"}, id="c1")])


@asynccontextmanager
async def two_nodes_with_a_tool(
    tmp_path: Path,
) -> AsyncIterator[tuple[FakeTelegram, ScriptedLLMServer, list[Runtime]]]:
    """Nodes a and b on one schema, each with the bash tool behind an approval."""
    async with (
        FakeTelegram(token=TOKEN, bot_username=BOT) as tg,
        ScriptedLLMServer() as llm,
    ):
        with postgres_db.fresh_schema() as schema:
            section = {"bot_token": TOKEN, "base_url": tg.url, "webhook_url": HOOK}
            runtimes: list[Runtime] = []
            try:
                for node in ("a", "b"):
                    root = tmp_path / node
                    root.mkdir()
                    write_workspace(
                        root,
                        llm_url=llm.openai_base_url,
                        telegram=section,
                        tools=BASH_TOOL,
                        policy=ASK_POLICY,
                    )
                    config = root / "duragent.yaml"
                    document = json.loads(config.read_text())
                    document["store"] = {
                        "backend": "postgres",
                        "dsn": postgres_db.DSN,
                        "schema": schema,
                        "node_id": node,
                        "lease_seconds": 5,
                    }
                    config.write_text(json.dumps(document))
                    runtime = Runtime(load_workspace(root), port=0)
                    runtimes.append(runtime)
                    await runtime.start()
                yield tg, llm, runtimes
            finally:
                for runtime in runtimes:
                    await runtime.aclose()


def prompts(tg: FakeTelegram) -> list[dict[str, Any]]:
    sent = [c for c in tg.calls("sendMessage", chat_id=CHAT) if c.ok and c.answer]
    return [c.answer["result"] for c in sent if c.answer and "reply_markup" in c.params]


def toasts(tg: FakeTelegram) -> list[str]:
    return [str(c.params.get("text", "")) for c in tg.calls("answerCallbackQuery") if c.ok]


async def test_a_press_reaching_the_node_without_the_session_is_decided_by_its_owner(
    tmp_path: Path,
) -> None:
    async with two_nodes_with_a_tool(tmp_path) as (tg, llm, (a, b)):
        secret = tg.calls("setWebhook")[0].params["secret_token"]
        llm.enqueue(RUN_ECHO, Reply(text="It printed ok."))
        assert await post(a, update_json(1, CHAT, 1, "please run echo"), secret) == 200
        assert await eventually(lambda: len(prompts(tg)) == 1), "no approval prompt"
        press = tg.push_callback_query(
            CHAT, prompts(tg)[0]["message_id"], button="Allow Once", user_id=CHAT
        )
        assert await post(b, json.dumps(press).encode(), secret) == 200  # the other node
        assert await eventually(lambda: "It printed ok." in tg.sent_messages(CHAT))
        assert len(toasts(tg)) == 1
        assert toasts(tg)[0].startswith("✓ Running: ")
        tool_results = [m for m in llm.requests[-1].json["messages"] if m["role"] == "tool"]
        assert "ok" in str(tool_results[0]["content"])
