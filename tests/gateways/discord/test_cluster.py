"""Two nodes serving one Discord bot on one PostgreSQL: every message is answered once.

Discord sends each event to every connected session of a bot, so with two nodes connected
(the decision in ``specs/202611240900.postgres-store.md``) each message reaches both; the
inbound ledger in the database lets one of them take it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from duragent.config import load_workspace
from duragent.runtime import Runtime
from duragent.testing import FakeDiscord, ScriptedLLMServer
from tests.gateways.discord.rig import TOKEN
from tests.gateways.telegram.rig import agent_yaml, echo_reply
from tests.polling import eventually

postgres_db = pytest.importorskip("tests.store.postgres_db")


async def test_a_message_every_connected_node_receives_is_answered_once(tmp_path: Path) -> None:
    async with FakeDiscord(TOKEN) as dc, ScriptedLLMServer(responder=echo_reply) as llm:
        with postgres_db.fresh_schema() as schema:
            runtimes: list[Runtime] = []
            try:
                for node in ("a", "b"):
                    root = tmp_path / node
                    agent = root / ".duragent" / "agents" / "bot"
                    agent.mkdir(parents=True)
                    (agent / "agent.yaml").write_text(agent_yaml(llm.openai_base_url, None, []))
                    store = {"backend": "postgres", "dsn": postgres_db.DSN, "schema": schema}
                    config = {
                        "server": {"host": "127.0.0.1"},
                        "store": store | {"node_id": node},
                        "gateways": {"discord": {"bot_token": TOKEN, "base_url": dc.url}},
                    }
                    (root / "duragent.yaml").write_text(json.dumps(config))
                    runtimes.append(Runtime(load_workspace(root), port=0))
                await asyncio.gather(*(r.start() for r in runtimes))  # each waits for guilds
                assert await eventually(lambda: dc.gateway.connected == 2)
                await dc.push_message(1001, "hi", dc.owner)
                assert await eventually(lambda: len(dc.sent(1001)) >= 1)
                assert await eventually(lambda: all(not r.tasks for r in runtimes))
                await asyncio.sleep(0.3)  # a second answer, if there were one, is sent by now
                assert [m["content"] for m in dc.sent(1001)] == ["re: hi"]
            finally:
                for runtime in runtimes:
                    await runtime.aclose()
