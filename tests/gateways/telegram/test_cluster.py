"""Two nodes serving one Telegram bot on one PostgreSQL: every update is answered once.

Each node is a real ``Runtime`` (or a real ``duragent serve`` process, for a crash) with a
workspace of its own and ``store: {backend: postgres}`` on one schema, in front of the fake
Bot API server. Webhook mode: the load balancer may hand the same update to either node
(Telegram retries it when it missed an answer). Polling mode: one node polls, the other
stands by and takes over when the poller stops or dies.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from duragent.config import load_workspace
from duragent.gateways.http.cluster.forwarding import FORWARDED_AT, FORWARDED_BY
from duragent.gateways.telegram.webhook import SECRET_HEADER
from duragent.runtime import Runtime
from duragent.testing import FakeTelegram, ScriptedLLMServer
from duragent.testing.serve_process import ServeProcess
from duragent.testing.telegram_faults import FaultRule
from tests.gateways.telegram.rig import BOT, TOKEN, echo_reply, write_workspace
from tests.polling import eventually

postgres_db = pytest.importorskip("tests.store.postgres_db")

HOOK = "https://bot.example.com/tg/hook"
JSON = {"Content-Type": "application/json"}


def write_node(
    root: Path, schema: str, node: str, telegram: dict[str, Any], llm: str, dsn: str | None = None
) -> Path:
    """A workspace for node ``node`` whose sessions live in the shared ``schema``."""
    root.mkdir(parents=True, exist_ok=True)
    write_workspace(root, llm_url=llm, telegram=telegram)
    config = root / "duragent.yaml"
    document = json.loads(config.read_text())
    document["store"] = {
        "backend": "postgres",
        "dsn": dsn or postgres_db.DSN,
        "schema": schema,
        "node_id": node,
        "lease_seconds": 1,
    }
    config.write_text(json.dumps(document))
    return config


@asynccontextmanager
async def two_nodes(
    tmp_path: Path, a_dsn: str | None = None, b_dsn: str | None = None, **telegram: Any
) -> AsyncIterator[tuple[FakeTelegram, list[Runtime]]]:
    """Nodes ``a`` and ``b`` (through ``a_dsn``/``b_dsn`` when given), started in that order."""
    async with (
        FakeTelegram(token=TOKEN, bot_username=BOT) as tg,
        ScriptedLLMServer(responder=echo_reply) as llm,
    ):
        with postgres_db.fresh_schema() as schema:
            section = {"bot_token": TOKEN, "base_url": tg.url, "poll_timeout_seconds": 1}
            runtimes: list[Runtime] = []
            try:
                for node in ("a", "b"):
                    root = tmp_path / node
                    dsn = a_dsn if node == "a" else b_dsn
                    write_node(root, schema, node, section | telegram, llm.openai_base_url, dsn)
                    runtime = Runtime(load_workspace(root), port=0)
                    runtimes.append(runtime)
                    await runtime.start()
                yield tg, runtimes
            finally:
                for runtime in runtimes:
                    await runtime.aclose()


def update_json(update_id: int, chat_id: int, message_id: int, text: str) -> bytes:
    message = {
        "message_id": message_id,
        "date": 1_700_000_000,
        "chat": {"id": chat_id, "type": "private", "first_name": "Ann"},
        "from": {"id": chat_id, "is_bot": False, "first_name": "Ann"},
        "text": text,
    }
    return json.dumps({"update_id": update_id, "message": message}).encode()


async def post(runtime: Runtime, body: bytes, secret: str) -> int:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{runtime.http_port}") as client:
        answer = await client.post(
            "/tg/hook", content=body, headers={**JSON, SECRET_HEADER: secret}
        )
        return answer.status_code


async def test_a_webhook_update_delivered_to_both_nodes_is_answered_once(tmp_path: Path) -> None:
    async with two_nodes(tmp_path, webhook_url=HOOK) as (tg, (a, b)):
        secret = tg.calls("setWebhook")[0].params["secret_token"]
        first = update_json(10, 42, 1, "hi by webhook")
        assert await post(a, first, secret) == 200
        assert await post(b, first, secret) == 200  # Telegram retried through the balancer
        assert await eventually(lambda: len(tg.sent_messages(42)) >= 1)

        second = update_json(11, 43, 1, "both at once")  # handed to both nodes at once
        statuses = await asyncio.gather(post(a, second, secret), post(b, second, secret))
        assert 200 in statuses
        for node, status in zip((a, b), statuses, strict=True):
            if status != 200:  # the other node was recording it: Telegram retries later
                assert await eventually(lambda: tg.sent_messages(43) != [])
                assert await post(node, second, secret) == 200
        assert await eventually(lambda: len(tg.sent_messages(43)) >= 1)
        assert await eventually(lambda: not a.tasks and not b.tasks)
        await asyncio.sleep(0.3)  # a second answer, if there were one, would be sent by now
        assert tg.sent_messages(42) == ["re: hi by webhook"]
        assert tg.sent_messages(43) == ["re: both at once"]


def chat_sessions(runtime: Runtime, chat_id: int) -> set[str]:
    """The sessions the shared chat map names for a Telegram chat (any agent)."""
    store: Any = runtime.registry.store
    return {sid for key, sid in store.chats.items() if key[:2] == ("telegram", str(chat_id))}


async def test_a_chats_messages_posted_to_either_node_are_answered_by_its_owner_in_order(
    tmp_path: Path,
) -> None:
    async with two_nodes(tmp_path, webhook_url=HOOK) as (tg, (a, b)):
        secret = tg.calls("setWebhook")[0].params["secret_token"]
        texts = [f"message {n}" for n in range(4)]
        for n, text in enumerate(texts):  # the balancer alternates: a, b, a, b, …
            node = (a, b)[n % 2]
            assert await post(node, update_json(100 + n, 42, n + 1, text), secret) == 200
            # the user reads the answer before writing again (quick ones would share a turn)
            assert await eventually(functools.partial(lambda n: len(tg.sent_messages(42)) > n, n))
        assert await eventually(lambda: not a.tasks and not b.tasks)
        await asyncio.sleep(0.3)  # a second answer, if there were one, would be sent by now
        assert tg.sent_messages(42) == [f"re: {text}" for text in texts]
        await asyncio.to_thread(a.registry.store.chats.load)
        assert len(chat_sessions(a, 42)) == 1
        assert b.forwarding is not None
        assert b.forwarding.forwarded == len(texts) // 2  # b's messages went to the owner, a

        forged = {**JSON, SECRET_HEADER: secret, FORWARDED_BY: "b", FORWARDED_AT: "1"}
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{a.http_port}") as client:
            body = update_json(150, 42, 40, "not from a node")
            answer = await client.post("/tg/hook", content=body, headers=forged)
        assert answer.status_code == 403  # a hop without the cluster's signature

        await a.aclose()  # the owner stops: b takes the chat's session over
        assert await post(b, update_json(200, 42, 50, "still there?"), secret) == 200
        assert await eventually(lambda: len(tg.sent_messages(42)) > len(texts))
        assert tg.sent_messages(42)[-1] == "re: still there?"
        assert b.registry.is_live(next(iter(chat_sessions(a, 42))))


@pytest.mark.slow  # ~20 s: the dead node's shutdown waits out its pool's timeouts
async def test_a_reply_a_dead_node_could_not_deliver_is_delivered_by_another(
    tmp_path: Path,
) -> None:
    relay = postgres_db.Outage()  # a's way to the database: cut, a is as good as dead
    try:
        async with two_nodes(tmp_path, a_dsn=relay.dsn, webhook_url=HOOK) as (tg, (a, _b)):
            secret = tg.calls("setWebhook")[0].params["secret_token"]
            tg.add_fault(FaultRule.server_failure(chat_id=42))  # Telegram fails a's sends
            assert await post(a, update_json(10, 42, 1, "are you there?"), secret) == 200
            assert await eventually(lambda: len(tg.calls("sendMessage")) >= 1)
            relay.down()  # a dies holding the session's lease, the reply undelivered
            await a.aclose()  # what it still tries to write is refused: it has no database
            tg.clear_faults()  # b's sweep failed to send too until now: it tries again
            assert await eventually(lambda: tg.sent_messages(42) != [])
            await asyncio.sleep(1.5)  # another sweep, if it sent it again, would have by now
            assert tg.sent_messages(42) == ["re: are you there?"]
    finally:
        relay.down()


def gateway_state(runtime: Runtime) -> str:
    return runtime.gateway_states()["telegram"]


async def test_one_node_polls_and_the_other_takes_over_when_it_stops(tmp_path: Path) -> None:
    async with two_nodes(tmp_path) as (tg, (a, b)):
        assert await eventually(lambda: gateway_state(b).startswith("standby"))
        assert gateway_state(a) == "running"
        tg.push_message(42, "hello")
        assert await eventually(lambda: tg.sent_messages(42) == ["re: hello"])
        await a.aclose()  # gives the lease up: b polls at once
        assert await eventually(lambda: gateway_state(b) == "running")
        tg.push_message(42, "still there?")
        assert await eventually(lambda: len(tg.sent_messages(42)) >= 2)
        assert await eventually(lambda: not b.tasks)
        assert tg.sent_messages(42) == ["re: hello", "re: still there?"]


async def readyz_state(client: httpx.AsyncClient, url: str) -> str:
    try:
        answer = await client.get(f"{url}/readyz")
    except httpx.TransportError:
        return ""
    return str(answer.json().get("gateways", {}).get("telegram", ""))


@pytest.mark.slow  # two `duragent serve` processes, a SIGKILL and a lease to expire: ~10 s
async def test_when_the_polling_node_is_killed_the_other_polls_within_the_lease(
    tmp_path: Path,
) -> None:
    async with (
        FakeTelegram(token=TOKEN, bot_username=BOT) as tg,
        ScriptedLLMServer(responder=echo_reply) as llm,
    ):
        with postgres_db.fresh_schema() as schema:
            section = {"bot_token": TOKEN, "base_url": tg.url, "poll_timeout_seconds": 1}
            nodes = [
                ServeProcess(write_node(tmp_path / n, schema, n, section, llm.openai_base_url))
                for n in ("a", "b")
            ]
            a, b = nodes
            try:
                a.start()
                await a.wait_ready()
                b.start()
                async with httpx.AsyncClient(timeout=5) as client:
                    assert await eventually(
                        lambda: _startswith(readyz_state(client, b.url), "standby"), within=60
                    )
                    tg.push_message(42, "hello")
                    assert await eventually(lambda: tg.sent_messages(42) == ["re: hello"])
                    a.kill()
                    killed = time.monotonic()
                    assert await eventually(
                        lambda: _startswith(readyz_state(client, b.url), "running"), within=10
                    )
                    took_over = time.monotonic() - killed
                    tg.push_message(42, "still there?")
                    assert await eventually(lambda: len(tg.sent_messages(42)) >= 2)
                    await asyncio.sleep(0.5)
            finally:
                for node in nodes:
                    node.stop()
        print(f"polling taken over {took_over:.2f} s after the SIGKILL (lease 1 s)")
        assert took_over <= 1 + 1  # the lease, plus a renewal interval and a poll
        assert tg.sent_messages(42) == ["re: hello", "re: still there?"]


async def _startswith(state: Any, prefix: str) -> bool:
    return str(await state).startswith(prefix)


async def test_a_polled_update_for_a_chat_another_node_serves_is_answered_once_by_that_node(
    tmp_path: Path,
) -> None:
    async with two_nodes(tmp_path) as (tg, (a, b)):
        assert await eventually(lambda: gateway_state(b).startswith("standby"))  # a polls
        tg.push_message(42, "hello")
        assert await eventually(lambda: tg.sent_messages(42) == ["re: hello"])
        (session,) = chat_sessions(a, 42)
        assert await eventually(lambda: not a.tasks)  # the reply's delivery is recorded too
        await a.registry.stop(session)  # idle: a let it go
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{b.http_port}") as client:
            web = await client.post(  # the user also talks to the session over HTTP, on b
                f"/api/v1/sessions/{session}/messages", json={"content": "from the web"}
            )
        assert web.status_code == 200
        assert b.registry.is_live(session)  # b serves the chat's session now
        for n, text in enumerate(["and again", "once more"], start=1):
            tg.push_message(42, text)
            assert await eventually(functools.partial(lambda n: len(tg.sent_messages(42)) > n, n))
        assert await eventually(lambda: not a.tasks and not b.tasks)
        await asyncio.sleep(0.3)  # a second answer, if there were one, would be sent by now
        assert tg.sent_messages(42) == ["re: hello", "re: and again", "re: once more"]
        assert a.relay is not None
        assert b.relay is not None
        assert (a.relay.relayed, b.relay.received) == (2, 2)  # recorded by the owner, b
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{a.http_port}") as client:
            scraped = (await client.get("/metrics")).text
            history = (await client.get(f"/api/v1/sessions/{session}/messages")).json()
        assert 'duragent_chat_relay{outcome="relayed"} 2.0' in scraped
        said = [m["content"] for m in history["messages"] if m["role"] == "user"]
        assert said == ["hello", "from the web", "and again", "once more"]  # one conversation
        assert not a.registry.is_live(session)

        await b.aclose()  # the owner stops: a, still polling, takes the session over
        tg.push_message(42, "still there?")
        assert await eventually(lambda: len(tg.sent_messages(42)) == 4)
        assert tg.sent_messages(42)[-1] == "re: still there?"
        assert a.registry.is_live(session)


@pytest.mark.slow  # ~20 s: the dead node's shutdown waits out its pool's timeouts
async def test_a_polled_update_for_a_chat_whose_owner_died_is_answered_once_its_lease_ran_out(
    tmp_path: Path,
) -> None:
    relay = postgres_db.Outage()  # b's way to the database: cut, b is as good as dead
    try:
        async with two_nodes(tmp_path, b_dsn=relay.dsn) as (tg, (a, b)):
            assert await eventually(lambda: gateway_state(b).startswith("standby"))  # a polls
            session = await b.turns.session_for_chat("telegram", "42", "bot", "dm")
            relay.down()  # b dies holding the session's lease: no heartbeat, no release
            tg.push_message(42, "anyone there?")
            assert await eventually(lambda: tg.sent_messages(42) != [])
            assert a.registry.is_live(session)  # taken over by the polling node
            await asyncio.sleep(0.5)  # a second answer, if there were one, would be sent by now
            assert tg.sent_messages(42) == ["re: anyone there?"]
            assert not tg.pending_updates()  # confirmed once answered
            await b.aclose()  # what it still tries to write is refused: it has no database
    finally:
        relay.down()
