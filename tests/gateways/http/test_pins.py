"""Pins over HTTP: pinned, sent with every request (even with summaries off), listed, unpinned."""

from __future__ import annotations

from pathlib import Path

from duragent.testing import Reply
from tests.gateways.http.api_fixtures import served


async def test_an_operator_pin_is_in_every_request_until_it_is_unpinned(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        pins = f"/api/v1/sessions/{sid}/pins"
        made = await s.client.post(pins, json={"text": "Budget is 40 EUR.", "kind": "decision"})
        assert made.status_code == 201
        pin_id = made.json()["pin_id"]
        s.server.enqueue(Reply(text="noted"), Reply(text="again"))
        await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "plan a trip"})
        block = s.server.requests[-1].json["messages"][1]
        assert block["role"] == "system"
        assert "decision: Budget is 40 EUR." in block["content"]
        listed = (await s.client.get(pins)).json()
        assert [p["text"] for p in listed["pins"]] == ["Budget is 40 EUR."]
        assert listed["pins"][0]["source"] == "operator"
        assert listed["task"] == "plan a trip"
        assert listed["summary"] is None
        assert (await s.client.delete(f"{pins}/{pin_id}")).status_code == 204
        assert (await s.client.delete(f"{pins}/{pin_id}")).status_code == 404
        await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "and?"})
        assert "Budget" not in str(s.server.requests[-1].json["messages"])


async def test_bad_pins_are_400_problems_and_unknown_sessions_404(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        pins = f"/api/v1/sessions/{sid}/pins"
        for body in ({}, {"text": " "}, {"text": "x", "kind": "secret"}, {"text": "x" * 9000}):
            bad = await s.client.post(pins, json=body)
            assert bad.status_code == 400, body
            assert bad.headers["content-type"] == "application/problem+json"
        missing = await s.client.get("/api/v1/sessions/session_nope/pins")
        assert missing.status_code == 404
