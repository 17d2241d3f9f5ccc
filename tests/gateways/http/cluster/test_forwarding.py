"""Several nodes on one database: a session's requests are served by the node that owns it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest

from duragent.config import load_workspace
from duragent.gateways.http.cluster.forwarding import (
    FORWARDED_AT,
    FORWARDED_BY,
    MOVED,
    SIGNATURE,
    sign,
)
from duragent.runtime import Runtime
from duragent.store import SharedStorage
from tests.store import postgres_db


def node_workspace(root: Path, schema: str, node: str) -> Path:
    agent = root / ".duragent" / "agents" / "alpha"
    agent.mkdir(parents=True)
    (agent / "agent.yaml").write_text(
        "apiVersion: duragent/v1alpha1\nkind: Agent\nmetadata:\n  name: alpha\n"
        "spec:\n  model:\n    provider: offline\n    name: duragent-offline\n"
    )
    (root / "duragent.yaml").write_text(
        f"store:\n  backend: postgres\n  dsn: '{postgres_db.DSN}'\n  schema: {schema}\n"
        f"  node_id: {node}\n"
    )
    return root


@pytest.fixture
async def two_nodes(tmp_path: Path) -> AsyncIterator[tuple[Runtime, Runtime]]:
    with postgres_db.fresh_schema() as schema:
        nodes = [
            Runtime(load_workspace(node_workspace(tmp_path / n, schema, n)), port=0)
            for n in ("n1", "n2")
        ]
        for node in nodes:
            await node.start()
        try:
            yield nodes[0], nodes[1]
        finally:
            for node in nodes:
                await node.aclose()


def url(node: Runtime) -> str:
    return f"http://127.0.0.1:{node.http_port}"


async def test_a_message_sent_to_another_node_is_answered_by_the_owner(
    two_nodes: tuple[Runtime, Runtime],
) -> None:
    owner, other = two_nodes
    async with httpx.AsyncClient(timeout=120) as client:
        made = await client.post(f"{url(owner)}/api/v1/sessions", json={"agent": "alpha"})
        sid = made.json()["session_id"]
        sent = [
            await client.post(
                f"{url(node)}/api/v1/sessions/{sid}/messages", json={"content": f"m{i}"}
            )
            for i, node in enumerate([owner, other, other, owner])
        ]
        history = await client.get(f"{url(other)}/api/v1/sessions/{sid}/messages")
        streamed = await client.post(
            f"{url(other)}/api/v1/sessions/{sid}/stream", json={"content": "s"}
        )
    assert [r.status_code for r in sent] == [200, 200, 200, 200], [r.text for r in sent]
    assert other.forwarding is not None
    assert other.forwarding.forwarded >= 3
    assert not other.registry.is_live(sid)  # served by the owner, never loaded here
    users = [m["content"] for m in history.json()["messages"] if m["role"] == "user"]
    assert users == ["m0", "m1", "m2", "m3"]
    assert streamed.status_code == 200
    assert "event: done" in streamed.text


async def test_a_forged_forwarding_header_is_refused(two_nodes: tuple[Runtime, Runtime]) -> None:
    owner, _ = two_nodes
    async with httpx.AsyncClient(timeout=120) as client:
        made = await client.post(f"{url(owner)}/api/v1/sessions", json={"agent": "alpha"})
        sid = made.json()["session_id"]
        forged = await client.get(
            f"{url(owner)}/api/v1/sessions/{sid}",
            headers={FORWARDED_BY: "n2", FORWARDED_AT: "0", SIGNATURE: "00"},
        )
    assert forged.status_code == 403


async def test_a_session_whose_owner_stopped_is_taken_over(
    two_nodes: tuple[Runtime, Runtime], write_agent: Callable[..., Path]
) -> None:
    owner, other = two_nodes
    async with httpx.AsyncClient(timeout=120) as client:
        made = await client.post(f"{url(owner)}/api/v1/sessions", json={"agent": "alpha"})
        sid = made.json()["session_id"]
        await client.post(f"{url(owner)}/api/v1/sessions/{sid}/messages", json={"content": "a"})
        await owner.registry.stop(sid)  # the owner let it go (idle, evicted)
        sent = await client.post(
            f"{url(other)}/api/v1/sessions/{sid}/messages", json={"content": "b"}
        )
    assert sent.status_code == 200
    assert other.registry.is_live(sid)


async def test_a_message_recorded_by_an_owner_that_went_away_is_answered_once_elsewhere(
    two_nodes: tuple[Runtime, Runtime],
) -> None:
    first, second = two_nodes
    async with httpx.AsyncClient(timeout=120) as client:
        made = await client.post(f"{url(first)}/api/v1/sessions", json={"agent": "alpha"})
        sid = made.json()["session_id"]
        # the first owner recorded the message, then went away before its turn ran
        await first.registry.handle(sid).add_user_message("hello", platform_message_id="http:k9")
        await first.registry.stop(sid)
        sent = await client.post(
            f"{url(second)}/api/v1/sessions/{sid}/messages",
            json={"content": "hello"},
            headers={"Idempotency-Key": "k9"},
        )
        history = await client.get(f"{url(second)}/api/v1/sessions/{sid}/messages")
    assert sent.status_code == 200
    assert sent.json()["role"] == "assistant"
    roles = [(m["role"], m["content"]) for m in history.json()["messages"]]
    assert [r for r, _ in roles] == ["user", "assistant"]
    assert roles[0] == ("user", "hello")


async def test_a_hop_is_never_forwarded_again_and_an_old_one_is_not_served(
    two_nodes: tuple[Runtime, Runtime],
) -> None:
    owner, other = two_nodes
    assert other.forwarding is not None
    key = await other.forwarding.hops.secret()  # what a node signs with

    def hop(at: float, body: bytes, target: str) -> dict[str, str]:
        stamp = f"{at:.3f}"
        return {
            FORWARDED_BY: "n1",
            FORWARDED_AT: stamp,
            "content-type": "application/json",
            SIGNATURE: sign(key, "POST", target, stamp, "n1", body),
        }

    async with httpx.AsyncClient(timeout=120) as client:
        made = await client.post(f"{url(owner)}/api/v1/sessions", json={"agent": "alpha"})
        sid = made.json()["session_id"]
        target = f"/api/v1/sessions/{sid}/messages"
        body = b'{"content": "x"}'
        # a hop to the wrong node: it does not own the session and must not forward again
        moved = await client.post(
            f"{url(other)}{target}", content=body, headers=hop(time.time(), body, target)
        )
        # a hop that waited longer than a lease (its sender served it itself meanwhile)
        late = await client.post(
            f"{url(owner)}{target}", content=body, headers=hop(time.time() - 3600, body, target)
        )
        history = await client.get(f"{url(owner)}{target}")
    assert moved.status_code == 503
    assert moved.headers[MOVED] == "n1"
    assert late.status_code == 503
    assert history.json()["messages"] == []


async def test_a_stopping_owner_s_sessions_are_taken_as_soon_as_it_lets_them_go(
    two_nodes: tuple[Runtime, Runtime],
) -> None:
    owner, other = two_nodes
    async with httpx.AsyncClient(timeout=10) as client:  # far less than the 30 s lease
        made = await client.post(f"{url(owner)}/api/v1/sessions", json={"agent": "alpha"})
        sid = made.json()["session_id"]
        store = owner.registry.store
        assert isinstance(store, SharedStorage)
        store.nodes.leave()  # a clean stop: first out of the nodes table, then its leases
        sending = asyncio.ensure_future(
            client.post(f"{url(other)}/api/v1/sessions/{sid}/messages", json={"content": "x"})
        )
        await asyncio.sleep(0.3)
        await owner.registry.stop(sid)
        sent = await sending
    assert sent.status_code == 200
    assert other.forwarding is not None
    assert other.forwarding.taken_over == 1


async def test_an_openai_conversation_continued_on_another_node_is_answered_by_its_owner(
    two_nodes: tuple[Runtime, Runtime],
) -> None:
    owner, other = two_nodes

    def turn(content: str, **extra: object) -> dict[str, object]:
        return {"model": "alpha", "messages": [{"role": "user", "content": content}], **extra}

    async with httpx.AsyncClient(timeout=120) as client:
        first = await client.post(f"{url(owner)}/v1/chat/completions", json=turn("m0", user="u1"))
        sid = first.headers["x-duragent-session"]
        by_key = await client.post(f"{url(other)}/v1/chat/completions", json=turn("m1", user="u1"))
        by_id = await client.post(
            f"{url(other)}/v1/chat/completions", json=turn("m2", session_id=sid)
        )
        streamed = await client.post(
            f"{url(other)}/v1/chat/completions", json=turn("m3", user="u1", stream=True)
        )
        history = await client.get(f"{url(owner)}/api/v1/sessions/{sid}/messages")
    answers = [first, by_key, by_id, streamed]
    assert [a.status_code for a in answers] == [200] * 4, [a.text for a in answers]
    assert {a.headers["x-duragent-session"] for a in answers} == {sid}
    assert by_key.json()["object"] == by_id.json()["object"] == "chat.completion"
    assert streamed.headers["content-type"].startswith("text/event-stream")
    assert '"chat.completion.chunk"' in streamed.text
    assert streamed.text.rstrip().endswith("data: [DONE]")
    assert other.forwarding is not None
    assert other.forwarding.forwarded == 3
    assert not other.registry.is_live(sid)  # served by the owner, never loaded here
    users = [m["content"] for m in history.json()["messages"] if m["role"] == "user"]
    assert users == ["m0", "m1", "m2", "m3"]  # one conversation, in order, each once
