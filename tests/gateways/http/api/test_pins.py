"""Pins over HTTP: pinned, sent with every request (even with summaries off), listed, unpinned."""

from __future__ import annotations

from pathlib import Path

from duragent.testing import Reply
from tests.gateways.http.api_fixtures import Served, served


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
        assert block["role"] == "user"  # a person wrote it: quoted, never system text
        assert "> - decision: Budget is 40 EUR." in block["content"]
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


def words(count: int, start: int = 0) -> str:
    """``count`` distinct words: text that costs about what its length says."""
    return " ".join(f"fact{k} alpha{k % 7}" for k in range(start, start + count))


def shrink_window(s: Served, tokens: int) -> None:
    """The operator edits agent.yaml to a smaller window and the agents are reloaded."""
    path = s.root / ".duragent" / "agents" / "bot" / "agent.yaml"
    path.write_text(
        path.read_text().replace("max_input_tokens: 16000", f"max_input_tokens: {tokens}")
    )
    s.runtime.reload_agents()


async def test_a_pin_the_agent_has_no_room_for_is_a_400_naming_the_field_the_limit_and_the_fix(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        shrink_window(s, 4096)  # pins get ~800 tokens there; 5,900 characters are ~1,600
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        pins = f"/api/v1/sessions/{sid}/pins"
        alone = await s.client.post(pins, json={"text": words(400)})
        small = await s.client.post(pins, json={"text": words(100)})
        together = await s.client.post(pins, json={"text": words(120, 200)})
        listed = (await s.client.get(pins)).json()["pins"]
        s.server.enqueue(Reply(text="fine"))
        turn = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "hi"})
    assert alone.status_code == 400
    assert alone.headers["content-type"] == "application/problem+json"
    problem = alone.json()
    assert problem["field"] == "text"
    assert 64 <= problem["limit_tokens"] < problem["tokens"]
    assert problem["pinned_tokens"] == 0
    assert f"at most {problem['limit_tokens']} tokens" in problem["detail"]
    assert "shorten the text" in problem["fix"]
    assert "pinned_share" in problem["fix"]
    assert small.status_code == 201
    assert together.status_code == 400
    assert together.json()["pinned_tokens"] > 0
    assert f"/api/v1/sessions/{sid}/pins/<pin_id>" in together.json()["fix"]
    assert [p["pin_id"] for p in listed] == [small.json()["pin_id"]]
    assert turn.status_code == 200  # what was accepted fits every turn


async def test_pins_the_agent_outgrew_fail_the_turn_with_a_409_naming_them_not_a_502(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        pins = f"/api/v1/sessions/{sid}/pins"
        made = await s.client.post(pins, json={"text": words(300)})
        assert made.status_code == 201  # a 16K window has room for it
        pin_id = made.json()["pin_id"]
        shrink_window(s, 4096)  # …a 4K one has not
        failed = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "hi"})
        asked = len(s.server.requests)
        assert (await s.client.delete(f"{pins}/{pin_id}")).status_code == 204
        s.server.enqueue(Reply(text="back"))
        again = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "hi"})
    assert failed.status_code == 409
    assert failed.headers["content-type"] == "application/problem+json"
    detail = failed.json()["detail"]
    assert pin_id in detail
    assert f"DELETE /api/v1/sessions/{sid}/pins/<pin_id>" in detail
    assert asked == 0  # the model was never the problem
    assert again.status_code == 200
