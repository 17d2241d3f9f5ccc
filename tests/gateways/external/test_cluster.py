"""Two nodes running one external gateway on one PostgreSQL: each message answered once.

With ``fans_out: true`` (a platform like Discord: every connected node receives every
event) the node serving the chat takes each message; the other defers, finds it taken, and
answers nothing. Each node runs the fake gateway child; the test emits each message to both.
Without it (a load-balanced platform: each message reaches one node) a node that gets a
message for a chat the other node serves hands it to that node (``cluster.relay``).
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
from duragent.testing import ScriptedLLMServer
from duragent.testing.fake_gateway import message
from duragent.testing.gateway_control import FakeChild, GatewayControl
from tests.gateways.telegram.rig import agent_yaml, echo_reply
from tests.polling import eventually

postgres_db = pytest.importorskip("tests.store.postgres_db")


def replies(children: list[FakeChild]) -> list[tuple[int, str]]:
    """(child, text) of every message the nodes sent, in the order they reached the test."""
    sent = [
        (at, n, str(c["content"]))
        for n, child in enumerate(children)
        for c, at in zip(child.commands, child.arrived, strict=True)
        if c.get("type") == "send_message"
    ]
    return [(n, text) for _, n, text in sorted(sent)]


@asynccontextmanager
async def two_nodes(
    tmp_path: Path, *, fans_out: bool
) -> AsyncIterator[tuple[list[Runtime], list[FakeChild]]]:
    """Nodes ``a`` and ``b``, each running the fake gateway ``fake``, on one fresh schema."""
    async with GatewayControl() as control, ScriptedLLMServer(responder=echo_reply) as llm:
        with postgres_db.fresh_schema() as schema:
            runtimes: list[Runtime] = []
            try:
                for node in ("a", "b"):
                    root = tmp_path / node
                    agent = root / ".duragent" / "agents" / "bot"
                    agent.mkdir(parents=True)
                    (agent / "agent.yaml").write_text(agent_yaml(llm.openai_base_url, None, []))
                    store = {"backend": "postgres", "dsn": postgres_db.DSN, "schema": schema}
                    gateway = {"name": "fake", "fans_out": fans_out, **control.command()}
                    config = {
                        "server": {"host": "127.0.0.1"},
                        "store": store | {"node_id": node, "lease_seconds": 1},
                        "gateways": {"external": [gateway]},
                    }
                    (root / "duragent.yaml").write_text(json.dumps(config))
                    runtimes.append(Runtime(load_workspace(root), port=0))
                    await runtimes[-1].start()
                yield runtimes, [await control.child(0), await control.child(1)]
            finally:
                for runtime in runtimes:
                    await runtime.aclose()


async def test_a_chats_messages_both_nodes_receive_are_answered_once_by_its_owner(
    tmp_path: Path,
) -> None:
    async with two_nodes(tmp_path, fans_out=True) as (runtimes, children):
        texts = [f"message {n}" for n in range(4)]
        for n, text in enumerate(texts):
            event = message("42", text, message_id=f"m{n}", sender_id="42")
            await asyncio.gather(*(child.emit(event) for child in children))
            assert await eventually(functools.partial(lambda n: len(replies(children)) > n, n))
        assert await eventually(lambda: all(not r.tasks for r in runtimes))
        await asyncio.sleep(0.3)  # a second answer, if there were one, is sent by now
        sent = replies(children)
    assert [text for _, text in sent] == [f"re: {t}" for t in texts]
    assert len({n for n, _ in sent}) == 1  # all from the node serving the chat


async def test_a_message_that_reached_the_node_not_serving_its_chat_is_answered_by_the_owner(
    tmp_path: Path,
) -> None:
    async with two_nodes(tmp_path, fans_out=False) as ((a, b), children):
        texts = [f"message {n}" for n in range(4)]
        for n, text in enumerate(texts[:3]):  # the first reaches a, the others b
            event = message("42", text, message_id=f"m{n}", sender_id="42")
            await children[min(n, 1)].emit(event)
            assert await eventually(functools.partial(lambda n: len(replies(children)) > n, n))
        assert await eventually(lambda: not a.tasks and not b.tasks)
        assert a.relay is not None
        assert b.relay is not None
        assert (b.relay.relayed, a.relay.received) == (2, 2)

        await a.aclose()  # the owner stops: b takes the chat's session over
        await children[1].emit(message("42", texts[3], message_id="m3", sender_id="42"))
        assert await eventually(lambda: len(replies(children)) == 4)
        assert await eventually(lambda: not b.tasks)
        await asyncio.sleep(0.3)  # a second answer, if there were one, is sent by now
        sent = replies(children)
    assert sent == [(0, f"re: {t}") for t in texts[:3]] + [(1, f"re: {texts[3]}")]
