"""``Idempotency-Key`` on a message: sent again (a retry after a lost answer), recorded once."""

from __future__ import annotations

from pathlib import Path

from duragent.testing import Reply
from tests.gateways.http.api_fixtures import served


async def test_a_message_sent_twice_with_one_key_is_recorded_and_answered_once(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="one answer"), Reply(text="never asked for"))
        url = f"/api/v1/sessions/{sid}/messages"
        first = await s.client.post(url, json={"content": "hi"}, headers={"Idempotency-Key": "k1"})
        again = await s.client.post(url, json={"content": "hi"}, headers={"Idempotency-Key": "k1"})
        history = (await s.client.get(url)).json()["messages"]
    assert first.json()["content"] == "one answer"
    assert again.status_code == 200
    assert again.json()["status"] == "duplicate"
    assert [(m["role"], m["content"]) for m in history] == [
        ("user", "hi"),
        ("assistant", "one answer"),
    ]


async def test_a_key_that_is_not_printable_or_too_long_is_refused(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        url = f"/api/v1/sessions/{sid}/messages"
        long = await s.client.post(
            url, json={"content": "x"}, headers={"Idempotency-Key": "k" * 201}
        )
    assert long.status_code == 400
