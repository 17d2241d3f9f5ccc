"""Two nodes serving one Discord bot on one PostgreSQL: every message is answered once.

Discord sends each event to every connected session of a bot, so with two nodes connected
(the decision in ``specs/202611240900.postgres-store.md``) each message reaches both; the
inbound ledger in the database lets one of them take it.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from duragent.config import load_workspace
from duragent.runtime import Runtime
from duragent.testing import FakeDiscord, ScriptedLLMServer
from tests.gateways.discord.rig import TOKEN
from tests.gateways.telegram.rig import agent_yaml, echo_reply
from tests.polling import eventually

postgres_db = pytest.importorskip("tests.store.postgres_db")


@asynccontextmanager
async def two_nodes(
    tmp_path: Path, dc: FakeDiscord, llm: ScriptedLLMServer, dsns: tuple[str, str] | None = None
) -> AsyncIterator[list[Runtime]]:
    """Nodes ``a`` and ``b`` on one schema (through ``dsns``), connected to the fake Discord."""
    with postgres_db.fresh_schema() as schema:
        runtimes: list[Runtime] = []
        try:
            for n, node in enumerate(("a", "b")):
                root = tmp_path / node
                agent = root / ".duragent" / "agents" / "bot"
                agent.mkdir(parents=True)
                (agent / "agent.yaml").write_text(agent_yaml(llm.openai_base_url, None, []))
                dsn = dsns[n] if dsns else postgres_db.DSN
                store = {"backend": "postgres", "dsn": dsn, "schema": schema}
                config = {
                    "server": {"host": "127.0.0.1"},
                    "store": store | {"node_id": node, "lease_seconds": 1},
                    "gateways": {"discord": {"bot_token": TOKEN, "base_url": dc.url}},
                }
                (root / "duragent.yaml").write_text(json.dumps(config))
                runtimes.append(Runtime(load_workspace(root), port=0))
            await asyncio.gather(*(r.start() for r in runtimes))  # each waits for guilds
            assert await eventually(lambda: dc.gateway.connected == 2)
            yield runtimes
        finally:
            for runtime in runtimes:
                await runtime.aclose()


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


async def test_a_chats_messages_are_taken_by_the_node_owning_its_session(tmp_path: Path) -> None:
    async with (
        FakeDiscord(TOKEN) as dc,
        ScriptedLLMServer(responder=echo_reply) as llm,
        two_nodes(tmp_path, dc, llm) as (a, b),
    ):
        texts = [f"message {n}" for n in range(4)]
        for n, text in enumerate(texts):
            await dc.push_message(1001, text, dc.owner)  # both nodes receive every message
            assert await eventually(functools.partial(lambda n: len(dc.sent(1001)) > n, n))
        assert await eventually(lambda: not a.tasks and not b.tasks)
        await asyncio.sleep(0.3)  # a second answer, if there were one, is sent by now
        assert [m["content"] for m in dc.sent(1001)] == [f"re: {t}" for t in texts]
        owners = [r for r in (a, b) if r.registry.live_count]
        assert len(owners) == 1  # one node served the chat; the other never loaded it

        # The owner lets the session go (idle; stopping a node in this process would undo
        # the other's discord.py endpoints): the next message is taken by one node, once.
        (session_id,) = [sid for _, sid in owners[0].registry.chat_sessions("discord")]
        await owners[0].registry.stop(session_id)
        await dc.push_message(1001, "still there?", dc.owner)
        assert await eventually(lambda: len(dc.sent(1001)) > len(texts))
        assert await eventually(lambda: not a.tasks and not b.tasks)
        await asyncio.sleep(0.3)
        assert [m["content"] for m in dc.sent(1001)][len(texts) :] == ["re: still there?"]


@pytest.mark.slow  # ~7 s: the dead owner's lease runs out, its shutdown waits for its pool
async def test_a_message_the_owner_dies_before_taking_is_answered_by_the_other_node(
    tmp_path: Path,
) -> None:
    relays = (postgres_db.Outage(), postgres_db.Outage())  # each node's way to the database
    try:
        async with (
            FakeDiscord(TOKEN) as dc,
            ScriptedLLMServer(responder=echo_reply) as llm,
            two_nodes(tmp_path, dc, llm, (relays[0].dsn, relays[1].dsn)) as runtimes,
        ):
            await dc.push_message(1001, "hi", dc.owner)
            assert await eventually(lambda: len(dc.sent(1001)) == 1)
            assert await eventually(lambda: not any(r.tasks for r in runtimes))
            owner = next(n for n, r in enumerate(runtimes) if r.registry.live_count)
            relays[owner].down()  # the owner dies holding a live lease on the chat's session
            await dc.push_message(1001, "still there?", dc.owner)  # the other node defers
            assert await eventually(lambda: len(dc.sent(1001)) == 2)
            assert dc.sent(1001)[-1]["content"] == "re: still there?"
            assert runtimes[1 - owner].registry.live_count == 1  # taken over
    finally:
        for relay in relays:
            relay.down()
