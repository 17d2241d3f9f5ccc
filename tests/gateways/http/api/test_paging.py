"""``?limit=`` on every list endpoint: above the maximum it is clamped and the answer says so.

A client written for the reference may ask for any positive number; it gets the maximum,
with ``X-Limit-Clamped`` and ``limit_clamped_to`` telling it so. Mistakes (0, negative, not
an integer) are still 400 problems that say what is allowed. The endpoints are found in the
OpenAPI document, so a new list endpoint with a limit is held to the same rule.
"""

from __future__ import annotations

from pathlib import Path

from duragent.gateways.http.api.paging import (
    LIMIT_CLAMPED_FIELD,
    LIMIT_CLAMPED_HEADER,
    MAX_MESSAGES_LIMIT,
)
from duragent.testing import Reply
from tests.gateways.http.api_fixtures import Served, served

PROBLEM = "application/problem+json"


async def session_with_a_reply(s: Served) -> str:
    sid: str = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
    s.server.enqueue(Reply(text="hello back"))
    await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "hello"})
    return sid


async def limited_endpoints(s: Served, sid: str) -> dict[str, int]:
    """Every GET path taking ``limit`` (session id filled in) → its documented maximum."""
    doc = (await s.client.get("/openapi.json")).json()
    found = {}
    for path, item in doc["paths"].items():
        get = item.get("get", {})
        if any(p["name"] == "limit" for p in get.get("parameters", [])):
            header = get["responses"]["200"]["headers"][LIMIT_CLAMPED_HEADER]
            found[path.replace("{session_id}", sid)] = header["schema"]["const"]
    return found


async def test_a_limit_above_the_maximum_answers_the_maximum_and_says_so(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = await session_with_a_reply(s)
        response = await s.client.get(f"/api/v1/sessions/{sid}/messages?limit=100000")
    assert response.status_code == 200
    assert response.headers[LIMIT_CLAMPED_HEADER] == str(MAX_MESSAGES_LIMIT)
    body = response.json()
    assert body[LIMIT_CLAMPED_FIELD] == MAX_MESSAGES_LIMIT
    assert [m["content"] for m in body["messages"]] == ["hello", "hello back"]


async def test_every_list_endpoint_with_a_limit_clamps_even_a_thousand_digit_limit(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        sid = await session_with_a_reply(s)
        endpoints = await limited_endpoints(s, sid)
        assert len(endpoints) >= 2  # sessions and messages: the walk found them
        for path, maximum in endpoints.items():
            for asked in (str(maximum + 1), "9" * 1000):
                response = await s.client.get(path, params={"limit": asked})
                assert response.status_code == 200, (path, response.text)
                assert response.headers[LIMIT_CLAMPED_HEADER] == str(maximum), path
                assert response.json()[LIMIT_CLAMPED_FIELD] == maximum, path


async def test_a_limit_within_the_maximum_is_answered_unmarked(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = await session_with_a_reply(s)
        for path, maximum in (await limited_endpoints(s, sid)).items():
            for asked in ("1", str(maximum), "+0010"):
                response = await s.client.get(path, params={"limit": asked})
                assert response.status_code == 200, (path, asked)
                assert LIMIT_CLAMPED_HEADER not in response.headers, (path, asked)
                assert LIMIT_CLAMPED_FIELD not in response.json(), (path, asked)


MISTAKES = [
    ("0", "limit must be 1 or more, got '0'"),
    ("-5", "limit must be 1 or more, got '-5'"),
    ("-" + "9" * 1000, "limit must be 1 or more"),
    ("ten", "limit must be a positive integer, got 'ten'"),
    ("1.5", "limit must be a positive integer, got '1.5'"),
    ("", "limit must be a positive integer, got ''"),
]


async def test_a_limit_that_is_a_mistake_is_a_400_that_says_what_is_allowed(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        sid = await session_with_a_reply(s)
        for path in await limited_endpoints(s, sid):
            for asked, says in MISTAKES:
                response = await s.client.get(path, params={"limit": asked})
                assert response.status_code == 400, (path, asked)
                assert response.headers["content-type"] == PROBLEM
                assert says in response.json()["detail"], (path, response.json())
