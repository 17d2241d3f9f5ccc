"""The path other nodes hand chat messages to serves signed hops only, and says why not."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from duragent.cluster import RELAY_PATH
from duragent.config import load_workspace
from duragent.frontkit import InboundMessage, Sender
from duragent.frontkit.relayed import to_wire
from duragent.gateways.http.cluster.forwarding import FORWARDED_AT, FORWARDED_BY, SIGNATURE, sign
from duragent.runtime import Runtime
from tests.gateways.http.cluster.test_forwarding import node_workspace, url
from tests.store import postgres_db

MESSAGE = InboundMessage(
    gateway="telegram",
    chat_id="42",
    chat_type="dm",
    message_id="7",
    sender=Sender("42", username="ann"),
    text="hello",
)


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Runtime]:
    with postgres_db.fresh_schema() as schema:
        runtime = Runtime(load_workspace(node_workspace(tmp_path / "n1", schema, "n1")), port=0)
        await runtime.start()
        try:
            yield runtime
        finally:
            await runtime.aclose()


async def test_only_a_signed_hop_is_taken_and_one_for_a_gateway_not_running_here_is_refused(
    node: Runtime,
) -> None:
    assert node.forwarding is not None
    key = await node.forwarding.hops.secret()
    body = to_wire(MESSAGE)

    def hop(signature: str | None = None) -> dict[str, str]:
        at = f"{time.time():.3f}"
        real = sign(key, "POST", RELAY_PATH, at, "n2", body)
        return {
            "content-type": "application/json",
            FORWARDED_BY: "n2",
            FORWARDED_AT: at,
            SIGNATURE: signature or real,
        }

    async with httpx.AsyncClient(base_url=url(node), timeout=120) as client:
        plain = await client.post(
            RELAY_PATH, content=body, headers={"content-type": "application/json"}
        )
        forged = await client.post(RELAY_PATH, content=body, headers=hop("00"))
        signed = await client.post(RELAY_PATH, content=body, headers=hop())
    assert plain.status_code == 403  # a client, not a node
    assert forged.status_code == 403
    assert signed.status_code == 503  # no Telegram here: its sender hands it again later
    assert "x-duragent-moved" not in signed.headers
