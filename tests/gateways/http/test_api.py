"""Every endpoint and status code over a real socket."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from duragent.gateways.http.server.media_limits import DEFAULT_LIMITS
from duragent.testing import Reply
from tests.gateways.http.api_fixtures import served

PROBLEM = "application/problem+json"
JSON = {"content-type": "application/json"}


async def test_a_session_is_created_used_listed_read_and_deleted(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        created = await s.client.post("/api/v1/sessions", json={"agent": "bot"})
        assert created.status_code == 201
        session = created.json()
        sid = session["session_id"]
        assert sid.startswith("session_")
        assert session["agent"] == "bot"
        assert session["status"] == "active"

        s.server.enqueue(Reply(text="Hi! How can I help?"))
        reply = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "hello"})
        assert reply.status_code == 200
        body = reply.json()
        assert body["role"] == "assistant"
        assert body["content"] == "Hi! How can I help?"
        assert body["message_id"].startswith("msg_")

        last = await s.client.get(f"/api/v1/sessions/{sid}/messages", params={"limit": 1})
        assert [m["content"] for m in last.json()["messages"]] == ["Hi! How can I help?"]
        both = await s.client.get(f"/api/v1/sessions/{sid}/messages")
        assert [m["role"] for m in both.json()["messages"]] == ["user", "assistant"]

        listed = (await s.client.get("/api/v1/sessions")).json()["sessions"]
        assert [x["session_id"] for x in listed] == [sid]
        got = (await s.client.get(f"/api/v1/sessions/{sid}")).json()
        assert got["session_id"] == sid
        assert got["updated_at"] >= got["created_at"]

        deleted = await s.client.delete(f"/api/v1/sessions/{sid}")
        assert deleted.status_code == 204
        gone = await s.client.get(f"/api/v1/sessions/{sid}")
        assert gone.status_code == 404
        assert gone.headers["content-type"] == PROBLEM


async def test_bad_input_is_a_400_or_404_or_413_problem_never_a_500(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        cases = [
            ("POST", "/api/v1/sessions", b"{not json", 400),
            ("POST", "/api/v1/sessions", b"[1, 2]", 400),
            ("POST", "/api/v1/sessions", b'{"agent": 5}', 400),
            ("POST", "/api/v1/sessions", b'{"agent": "ghost"}', 404),
            ("POST", f"/api/v1/sessions/{sid}/messages", b"{}", 400),
            ("POST", f"/api/v1/sessions/{sid}/messages", b'{"content": ""}', 400),
            ("POST", "/api/v1/sessions/session_nope/messages", b'{"content": "x"}', 404),
            ("GET", f"/api/v1/sessions/{sid}/messages?limit=zero", b"", 400),
            ("GET", f"/api/v1/sessions/{sid}/messages?limit=0", b"", 400),
            (
                "POST",
                f"/api/v1/sessions/{sid}/approve",
                b'{"call_id": "x", "decision": "deny"}',
                404,
            ),
            ("DELETE", "/api/v1/sessions/session_nope", b"", 404),
            ("GET", "/api/v1/agents/ghost", b"", 404),
        ]
        for method, path, body, status in cases:
            response = await s.client.request(method, path, content=body, headers=JSON)
            assert response.status_code == status, (method, path, response.text)
            assert response.headers["content-type"] == PROBLEM
            assert response.json()["status"] == status
        huge = b'{"agent": "' + b"x" * (2 * 1024 * 1024 + 10) + b'"}'
        too_big = await s.client.post("/api/v1/sessions", content=huge, headers=JSON)
        assert too_big.status_code == 413
        # a message may carry attachments: its routes take more (test_uploads), not unbounded
        huge = b'{"content": "' + b"x" * (DEFAULT_LIMITS.body + 10) + b'"}'
        too_big = await s.client.post(
            f"/api/v1/sessions/{sid}/messages", content=huge, headers=JSON
        )
        assert too_big.status_code == 413


async def test_a_failing_model_is_a_502_that_says_why(tmp_path: Path) -> None:
    from duragent.testing import Fault

    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Fault.unauthorized())
        reply = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "hi"})
    assert reply.status_code == 502
    assert reply.headers["content-type"] == PROBLEM
    assert reply.json()["type"] == "urn:duragent:problem:bad-gateway"
    assert reply.json()["title"] == "Bad Gateway"
    assert "401" in reply.json()["detail"]


async def test_the_openapi_document_describes_every_route(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        doc = (await s.client.get("/openapi.json")).json()
    assert doc["openapi"].startswith("3.1")
    assert set(doc["paths"]) >= {
        "/livez",
        "/readyz",
        "/version",
        "/api/v1/agents",
        "/api/v1/agents/{name}",
        "/api/v1/sessions",
        "/api/v1/sessions/{session_id}",
        "/api/v1/sessions/{session_id}/messages",
        "/api/v1/sessions/{session_id}/stream",
        "/api/v1/sessions/{session_id}/approve",
        "/api/v1/sessions/{session_id}/attachments/{sha256}",
        "/api/admin/v1/shutdown",
        "/api/admin/v1/reload-agents",
        "/metrics",
    }


async def test_admin_reload_and_shutdown_answer_json_keeping_the_reference_text(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        broken = s.root / ".duragent" / "agents" / "broken"
        broken.mkdir()
        (broken / "agent.yaml").write_text("kind: Agent\n")
        reload = await s.client.post("/api/admin/v1/reload-agents")
        assert reload.status_code == 200
        assert reload.headers["content-type"] == "application/json"
        body = reload.json()
        assert body["reloaded"] == 1
        assert body["agents"] == ["bot"]
        assert body["message"] == "Reloaded 1 agents"
        assert [b["path"].endswith("broken") for b in body["broken"]] == [True]
        assert body["broken"][0]["error"]
        first = await s.client.post("/api/admin/v1/shutdown")
        assert first.headers["content-type"] == "application/json"
        assert first.json() == {"status": "shutting_down", "message": "Shutdown initiated"}
        second = await s.client.post("/api/admin/v1/shutdown")
        assert second.status_code == 409


async def test_a_reload_that_moves_an_agents_model_endpoint_says_so_loudly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-the-owners-key")
    async with served(tmp_path) as s:
        agent = s.root / ".duragent" / "agents" / "bot" / "agent.yaml"
        same = await s.client.post("/api/admin/v1/reload-agents")
        assert same.json()["endpoint_changes"] == []
        text = agent.read_text()
        agent.write_text(
            text.replace("provider: fake", "provider: openai").replace(
                s.server.openai_base_url, "https://user:pw@evil.example:8443/v1"
            )
        )
        with caplog.at_level(logging.WARNING, logger="duragent.runtime.server"):
            moved = await s.client.post("/api/admin/v1/reload-agents")
    host = s.server.openai_base_url.split("//")[1].split("/")[0]
    where = "agent 'bot' (spec.model in bot/agent.yaml)"
    said = [
        f"{where}: spec.model.provider changed since the server started: fake → openai",
        f"{where}: spec.model.base_url changed since the server started: its model calls and "
        f"provider key now go to evil.example:8443 (was {host})",
        f"{where}: the key source changed since the server started: FAKE_API_KEY → OPENAI_API_KEY",
    ]
    body = moved.json()
    assert body["endpoint_changes"] == said
    assert body["agents"] == ["bot"]  # the existing fields stay
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert [w for w in warnings if w.startswith(where)] == said
    assert "sk-the-owners-key" not in moved.text + caplog.text
    assert "pw" not in " ".join(said)
