"""Where the reference's documentation and its code disagree, this server follows the code.

- Error bodies: ``type`` is ``urn:duragent:problem:<kebab-name>`` (the code's
  ``problem_details.rs``), never the documentation's ``not_found`` / ``session_ended`` codes.
- An ended session is answered 404 for new turns (the code drops it from its registry), not
  the documented 410; nothing here answers 410.
- ``cancelled`` {} ends a stream whose turn the server stopped (the code's ``sse::CANCELLED``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from duragent.gateways.http.api import stream as stream_module
from duragent.gateways.http.server.problem import PROBLEM_TYPES
from duragent.testing import Reply
from tests.gateways.http.api.test_stream import read_events
from tests.gateways.http.api_fixtures import served


def test_problem_types_use_the_reference_codes_urns_and_no_410() -> None:
    # the three the reference's code defines, spelled as it spells them
    assert PROBLEM_TYPES[400].urn == "urn:duragent:problem:bad-request"
    assert PROBLEM_TYPES[404].urn == "urn:duragent:problem:not-found"
    assert PROBLEM_TYPES[500].urn == "urn:duragent:problem:internal-error"
    assert 410 not in PROBLEM_TYPES
    assert all("_" not in kind.name for kind in PROBLEM_TYPES.values())


async def test_an_ended_session_takes_no_turns_but_stays_readable(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="before the end"))
        await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "hi"})
        ended = await s.client.post(f"/api/v1/sessions/{sid}/end")
        assert ended.status_code == 200
        assert ended.json()["status"] == "completed"
        again = await s.client.post(f"/api/v1/sessions/{sid}/end")  # idempotent
        assert (again.status_code, again.json()["status"]) == (200, "completed")
        for path, body in (
            ("messages", {"content": "more"}),
            ("stream", {"content": "more"}),
            ("approve", {"call_id": "call_1", "decision": "deny"}),
        ):
            refused = await s.client.post(f"/api/v1/sessions/{sid}/{path}", json=body)
            assert refused.status_code == 404, path
            problem = refused.json()
            assert problem["type"] == "urn:duragent:problem:not-found"
            assert "has ended" in problem["detail"]
        assert (await s.client.get(f"/api/v1/sessions/{sid}")).json()["status"] == "completed"
        history = (await s.client.get(f"/api/v1/sessions/{sid}/messages")).json()["messages"]
        assert [m["content"] for m in history] == ["hi", "before the end"]
        missing = await s.client.post("/api/v1/sessions/session_nope/end")
        assert missing.status_code == 404


async def test_a_stream_the_server_stops_ends_with_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream_module, "STOP_GRACE_SECONDS", 0.3)
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="a reply too slow for the shutdown", delay=30))

        async def listen() -> list[str]:
            async with s.client.stream(
                "POST", f"/api/v1/sessions/{sid}/stream", json={"content": "slow"}
            ) as response:
                return [name for _, name, _ in await read_events(response)]

        listening = asyncio.create_task(listen())
        await asyncio.sleep(0.3)  # the turn is waiting for the model
        stopping = asyncio.create_task(s.runtime.aclose())
        names = await asyncio.wait_for(listening, 120)
        await stopping
    assert names == ["start", "cancelled"]


async def test_a_turn_that_finishes_within_the_grace_is_not_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream_module, "STOP_GRACE_SECONDS", 3.0)
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="just in time", delay=0.6))

        async def listen() -> list[str]:
            async with s.client.stream(
                "POST", f"/api/v1/sessions/{sid}/stream", json={"content": "quick"}
            ) as response:
                return [name for _, name, _ in await read_events(response)]

        listening = asyncio.create_task(listen())
        await asyncio.sleep(0.2)
        stopping = asyncio.create_task(s.runtime.aclose())
        names = await asyncio.wait_for(listening, 120)
        await stopping
    assert names[0] == "start"
    assert names[-1] == "done"
    assert "cancelled" not in names
