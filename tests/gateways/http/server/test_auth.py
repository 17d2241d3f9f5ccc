"""Bearer tokens (constant-time), loopback-only without a token, admin separate (401 vs 403)."""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.gateways.http.server.security import is_loopback
from tests.gateways.http.api_fixtures import served

TOKENS = "  api_token: api-secret\n  admin_token: admin-secret\n"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.5.6.7", True),
        ("::1", True),
        ("10.0.0.1", False),
        ("192.168.1.2", False),
        ("8.8.8.8", False),
        (None, False),
        ("not-an-ip", False),
    ],
)
def test_only_loopback_addresses_count_as_local(host: str | None, loopback: bool) -> None:
    assert is_loopback(host) is loopback


async def test_the_api_token_is_required_when_set(tmp_path: Path) -> None:
    async with served(tmp_path, server_yaml=TOKENS) as s:
        url = "/api/v1/agents"
        assert (await s.client.get(url)).status_code == 401
        wrong = await s.client.get(url, headers={"authorization": "Bearer nope"})
        assert wrong.status_code == 401
        assert wrong.headers["content-type"] == "application/problem+json"
        basic = await s.client.get(url, headers={"authorization": "Basic api-secret"})
        assert basic.status_code == 401
        ok = await s.client.get(url, headers={"authorization": "Bearer api-secret"})
        assert ok.status_code == 200
        assert (await s.client.get("/livez")).status_code == 200  # health stays public


async def test_admin_routes_take_only_the_admin_token_and_answer_403(tmp_path: Path) -> None:
    async with served(tmp_path, server_yaml=TOKENS) as s:
        url = "/api/admin/v1/reload-agents"
        assert (await s.client.post(url)).status_code == 403
        api = await s.client.post(url, headers={"authorization": "Bearer api-secret"})
        assert api.status_code == 403
        ok = await s.client.post(url, headers={"authorization": "Bearer admin-secret"})
        assert ok.status_code == 200


async def test_without_tokens_loopback_clients_are_served(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        assert (await s.client.get("/api/v1/agents")).status_code == 200
        assert (await s.client.post("/api/admin/v1/reload-agents")).status_code == 200
