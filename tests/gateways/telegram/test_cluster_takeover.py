"""A node that takes a chat's session over from a dead node finishes what that node left.

Node a (a real ``duragent serve``) serves the chat: the model asked to run a tool, the
requester allowed it, and a is SIGKILLed while the approved call runs. The turn is left
unfinished: the decision is on disk, the model's next step never ran. Then something that
records nothing reaches node b for the chat (a late press of the same button): b finds a's
lease, waits for it to run out and takes the session over. Before, only the sweep for chats
a dead node left (on the holder of the ``recovery:telegram`` leader lease) finished such a
turn, and it looks only at expired leases: once b held the session, nobody ever finished it
(the month of strangers with two nodes, issue 40: a chat silent for 8 simulated days). The
leader lease is held by a third node here, so no sweep runs and only the take-over can help.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from duragent.config import load_workspace
from duragent.gateways.telegram.webhook import SECRET_HEADER
from duragent.runtime import Runtime
from duragent.store.postgres import migrate
from duragent.store.postgres.cluster import PostgresLeaders
from duragent.testing import FakeTelegram, Reply, ScriptedLLMServer, ToolCallReply
from duragent.testing.serve_process import ServeProcess
from tests.gateways.telegram.rig import (
    ASK_POLICY,
    BASH_TOOL,
    BOT,
    TOKEN,
    write_workspace,
)
from tests.gateways.telegram.test_cluster import HOOK, post, update_json
from tests.gateways.telegram.test_cluster_presses import prompts, toasts
from tests.gateways.telegram.test_previews_restart import streamed
from tests.polling import eventually

postgres_db = pytest.importorskip("tests.store.postgres_db")

CHAT = 42
LEASE = 2
SLEEP = Reply(tool_calls=[ToolCallReply(name="bash", arguments={"command": "sleep 60"}, id="c1")])


def node_config(root: Path, schema: str, node: str, tg: FakeTelegram, llm: str) -> Path:
    """Node ``node``'s workspace: webhook mode, the bash tool behind an approval."""
    root.mkdir(parents=True)
    section = {"bot_token": TOKEN, "base_url": tg.url, "webhook_url": HOOK}
    write_workspace(root, llm_url=llm, telegram=section, tools=BASH_TOOL, policy=ASK_POLICY)
    config = root / "duragent.yaml"
    document: dict[str, Any] = json.loads(config.read_text())
    document["store"] = {
        "backend": "postgres",
        "dsn": postgres_db.DSN,
        "schema": schema,
        "node_id": node,
        "lease_seconds": LEASE,
    }
    config.write_text(json.dumps(document))
    return config


def no_sweeps(schema: str) -> None:
    """A third node holds the ``recovery:telegram`` leader lease for an hour."""
    with postgres_db.database(schema) as db:
        db.open()
        migrate(db)
        assert PostgresLeaders(db, "c", 3600).acquire("recovery:telegram")


@dataclass
class Nodes:
    tg: FakeTelegram
    llm: ScriptedLLMServer
    a: ServeProcess
    b: Runtime
    secret: str

    async def to_a(self, body: bytes) -> None:
        assert await post_to(self.a.url, body, self.secret) == 200

    async def to_b(self, body: bytes) -> None:
        assert await post(self.b, body, self.secret) == 200


@asynccontextmanager
async def a_and_b(tmp_path: Path) -> AsyncIterator[Nodes]:
    """Node a as a child process, node b in this one; no sweep (``no_sweeps``)."""
    async with (
        FakeTelegram(token=TOKEN, bot_username=BOT) as tg,
        ScriptedLLMServer() as llm,
    ):
        with postgres_db.fresh_schema() as schema:
            no_sweeps(schema)
            a = ServeProcess(node_config(tmp_path / "a", schema, "a", tg, llm.openai_base_url))
            b_config = node_config(tmp_path / "b", schema, "b", tg, llm.openai_base_url)
            b = Runtime(load_workspace(b_config.parent), port=0)
            try:
                a.start()
                await a.wait_ready()
                await b.start()
                secret = tg.calls("setWebhook")[0].params["secret_token"]
                yield Nodes(tg, llm, a, b, secret)
            finally:
                a.stop()
                await b.aclose()


@pytest.mark.parametrize("late", ["press", "message"])
async def test_a_turn_a_killed_node_left_unfinished_goes_on_where_its_session_is_taken_over(
    tmp_path: Path, late: str
) -> None:
    """``late``: what reaches b: a late press (recorded nowhere) or a new message (one
    turn then answers both: the chat's queue batches)."""
    async with a_and_b(tmp_path) as nodes:
        tg = nodes.tg
        nodes.llm.enqueue(SLEEP, Reply(text="The nap is over."))
        await nodes.to_a(update_json(1, CHAT, 1, "take a nap"))
        assert await eventually(lambda: len(prompts(tg)) == 1), "no approval prompt"
        prompt = prompts(tg)[0]["message_id"]
        allow = allow_once(prompts(tg)[0])
        await nodes.to_a(
            json.dumps(tg.push_callback_query(CHAT, prompt, allow, user_id=CHAT)).encode()
        )
        assert await eventually(lambda: any(t.startswith("✓ Running") for t in toasts(tg)))
        before = len(tg.sent_messages(CHAT))
        nodes.a.kill()  # while the approved call runs: the turn is left unfinished
        if late == "press":
            again = tg.push_callback_query(CHAT, prompt, allow, user_id=CHAT, stale=True)
            await nodes.to_b(json.dumps(again).encode())
        else:
            await nodes.to_b(update_json(2, CHAT, 2, "are you awake?"))
        assert await eventually(lambda: "The nap is over." in tg.sent_messages(CHAT), within=30), (
            "the approved turn never went on"
        )
        await asyncio.sleep(LEASE)  # a second answer, if there were one, would be out by now
        assert tg.sent_messages(CHAT)[before:] == ["The nap is over."]  # one turn


async def test_a_preview_a_killed_node_left_half_written_is_finished_by_the_node_taking_over(
    tmp_path: Path,
) -> None:
    """The preview's record is a row every node sees, not a file in node a's folder."""
    async with a_and_b(tmp_path) as nodes:
        tg = nodes.tg
        half = " ".join(f"half{i}" for i in range(200))
        nodes.llm.enqueue(streamed(half, 200, 0.2), Reply(text="The whole **answer**."))
        await nodes.to_a(update_json(1, CHAT, 1, "a question"))
        assert await eventually(lambda: bool(tg.edits(CHAT)), within=60), "no preview edit"
        [preview] = [c.answer["result"]["message_id"] for c in tg.calls("sendMessage") if c.answer]
        nodes.a.kill()  # mid-stream: the reply was never written
        await nodes.to_b(update_json(2, CHAT, 2, "still there?"))
        assert await eventually(lambda: tg.final_texts(CHAT) == ["The whole answer."], within=30), (
            tg.final_texts(CHAT)
        )
        assert [d.message_id for d in tg.deleted(CHAT)] == [preview]


def allow_once(prompt: dict[str, Any]) -> str:
    """The data of the prompt's "Allow Once" button (a late press sends it again)."""
    rows = prompt["reply_markup"]["inline_keyboard"]
    return next(str(b["callback_data"]) for row in rows for b in row if b["text"] == "Allow Once")


async def post_to(url: str, body: bytes, secret: str) -> int:
    """``post`` to a node in a child process (by its address)."""
    headers = {"Content-Type": "application/json", SECRET_HEADER: secret}
    async with httpx.AsyncClient(base_url=url) as client:
        return (await client.post("/tg/hook", content=body, headers=headers)).status_code
