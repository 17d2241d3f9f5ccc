"""Web pages in the user's browser cannot drive a loopback server (CSRF, DNS rebinding)."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.datastructures import Headers

from duragent.config.workspace import ServerConfig
from duragent.gateways.http.server.browser import is_loopback_name, request_problem, split_host
from tests.gateways.http.api_fixtures import served

PROBLEM = "application/problem+json"
JSON = {"content-type": "application/json"}


async def test_a_cross_site_text_plain_post_cannot_shut_the_server_down(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        forged = await s.client.post(
            "/api/admin/v1/shutdown",
            content=b"x",
            headers={"origin": "https://evil.example", "content-type": "text/plain"},
        )
        assert forged.status_code == 403
        assert forged.headers["content-type"] == PROBLEM
        assert "server.allowed_origins" in forged.json()["detail"]
        plain = await s.client.post(
            "/api/admin/v1/shutdown", content=b"x", headers={"content-type": "text/plain"}
        )
        assert plain.status_code == 415
        assert (await s.client.get("/livez")).status_code == 200  # still running


async def test_a_dns_rebinding_page_is_refused_by_its_host_name(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        port = s.runtime.http_port
        rebound = {"host": f"evil.example:{port}", "origin": f"http://evil.example:{port}"}
        created = await s.client.post("/api/v1/sessions", json={"agent": "bot"}, headers=rebound)
        assert created.status_code == 403
        assert "server.allowed_hosts" in created.json()["detail"]
        read = await s.client.get("/api/v1/sessions", headers={"host": "evil.example"})
        assert read.status_code == 403
        assert (await s.client.get("/api/v1/sessions")).json()["sessions"] == []
        probe = await s.client.get("/livez", headers={"host": "10.1.2.3:8080"})
        assert probe.status_code == 200  # public routes answer any name (container probes)


@pytest.mark.parametrize(
    "host",
    ["localhost", "localhost:8080", "127.0.0.1:9", "127.3.2.1", "[::1]:8080", "app.localhost"],
)
async def test_loopback_host_names_are_served(tmp_path: Path, host: str) -> None:
    async with served(tmp_path) as s:
        assert (await s.client.get("/api/v1/agents", headers={"host": host})).status_code == 200


async def test_configured_hosts_and_origins_are_served(tmp_path: Path) -> None:
    extra = "  allowed_hosts: [MyBox.lan]\n  allowed_origins: ['https://console.example/']\n"
    async with served(tmp_path, server_yaml=extra) as s:
        headers = {"host": "mybox.lan:8080", "origin": "https://console.example"}
        assert (await s.client.get("/api/v1/agents", headers=headers)).status_code == 200
        same_origin = {"host": "mybox.lan:8080", "origin": "http://mybox.lan:8080"}
        assert (await s.client.get("/api/v1/agents", headers=same_origin)).status_code == 200
        other = {"origin": "https://other.example"}
        assert (await s.client.get("/api/v1/agents", headers=other)).status_code == 403


async def test_loopback_origins_are_served_and_null_is_not(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        for origin in ("http://localhost:3000", f"http://127.0.0.1:{s.runtime.http_port}"):
            ok = await s.client.get("/api/v1/agents", headers={"origin": origin})
            assert ok.status_code == 200, origin
        null = await s.client.get("/api/v1/agents", headers={"origin": "null"})
        assert null.status_code == 403


async def test_with_a_token_any_host_is_served_but_a_foreign_origin_is_not(
    tmp_path: Path,
) -> None:
    tokens = "  api_token: api-secret\n"
    async with served(tmp_path, token="api-secret", server_yaml=tokens) as s:
        remote = await s.client.get("/api/v1/agents", headers={"host": "duragent.example"})
        assert remote.status_code == 200
        foreign = {"host": "duragent.example", "origin": "https://evil.example"}
        assert (await s.client.get("/api/v1/agents", headers=foreign)).status_code == 403
        # admin has no token here: still loopback mode, Host checked
        admin = await s.client.post("/api/admin/v1/reload-agents", headers={"host": "x.example"})
        assert admin.status_code == 403


async def test_bodies_must_be_json_and_a_charset_is_fine(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        body = b'{"agent": "bot"}'
        for content_type in ("application/json", "application/json; charset=utf-8"):
            ok = await s.client.post(
                "/api/v1/sessions", content=body, headers={"content-type": content_type}
            )
            assert ok.status_code == 201, content_type
        for headers in ({}, {"content-type": "text/plain"}, {"content-type": "application/x"}):
            refused = await s.client.post("/api/v1/sessions", content=body, headers=headers)
            assert refused.status_code == 415, headers
            assert refused.headers["content-type"] == PROBLEM
        empty = await s.client.post("/api/admin/v1/reload-agents")  # no body: no type needed
        assert empty.status_code == 200


async def test_with_a_token_a_script_may_post_json_without_a_content_type(
    tmp_path: Path,
) -> None:
    # curl -d '{...}' sends application/x-www-form-urlencoded; scripts written for the
    # reference do that. A page cannot send the bearer token, so nothing is forged here.
    tokens = "  api_token: api-secret\n"
    async with served(tmp_path, token="api-secret", server_yaml=tokens) as s:
        form = {"content-type": "application/x-www-form-urlencoded"}
        made = await s.client.post("/api/v1/sessions", content=b'{"agent": "bot"}', headers=form)
        assert made.status_code == 201, made.text


@pytest.mark.parametrize(
    ("value", "name", "port"),
    [("LocalHost:80", "localhost", "80"), ("[::1]:8080", "::1", "8080"), ("a.b", "a.b", "")],
)
def test_host_values_are_split_into_name_and_port(value: str, name: str, port: str) -> None:
    assert split_host(value) == (name, port)


@pytest.mark.parametrize(
    ("name", "loopback"),
    [
        ("localhost", True),
        ("x.localhost", True),
        ("127.9.9.9", True),
        ("::1", True),
        ("127.0.0.1.evil.example", False),
        ("localhost.evil.example", False),
        ("10.0.0.1", False),
    ],
)
def test_only_loopback_names_count_as_local(name: str, loopback: bool) -> None:
    assert is_loopback_name(name) is loopback


def test_a_request_without_host_or_origin_passes_like_a_cli_client() -> None:
    assert request_problem("GET", "/api/v1/agents", Headers({}), ServerConfig()) is None


@pytest.mark.parametrize(
    ("path", "taken"),
    [
        ("/api/v1/sessions/session_x/messages", True),
        ("/api/v1/sessions/session_x/stream", True),
        ("/api/v1/sessions", False),
        ("/api/v1/sessions/session_x/approve", False),
        ("/v1/chat/completions", False),  # OpenAI's API is JSON
        ("/api/v1/sessions/a/b/messages", False),
    ],
)
def test_without_a_token_a_form_is_taken_only_by_a_messages_routes(path: str, taken: bool) -> None:
    form = Headers({"content-type": "multipart/form-data; boundary=x", "content-length": "9"})
    assert (request_problem("POST", path, form, ServerConfig()) is None) is taken
    cross_site = Headers({**form, "origin": "https://evil.example"})
    refused = request_problem("POST", path, cross_site, ServerConfig())
    assert refused is not None
    assert refused[0] == 403
