"""Every turn endpoint names its turn (``X-Duragent-Turn``; the stream's ``start`` too)."""

from __future__ import annotations

import json
from pathlib import Path

from duragent.testing import Fault, Reply, ToolCallReply
from tests.gateways.http.api_fixtures import served

BASH_TOOL = "  tools:\n    - type: builtin\n      name: bash\n"
ASK = "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: ask\n"


async def test_the_stream_names_its_turn_in_the_header_and_the_start_event(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        s.server.enqueue(Reply(text="streamed"))
        url = f"/api/v1/sessions/{sid}/stream"
        async with s.client.stream("POST", url, json={"content": "hi"}) as response:
            header = response.headers["x-duragent-turn"]
            data = [line async for line in response.aiter_lines() if line.startswith("data:")]
        first = data[0]
        assert header.startswith("turn_")
        assert json.loads(first.split(":", 1)[1]) == {"turn_id": header}


async def test_each_turn_gets_its_own_id_even_when_it_fails_or_waits(tmp_path: Path) -> None:
    async with served(tmp_path, tools=BASH_TOOL, policy=ASK) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        url = f"/api/v1/sessions/{sid}"
        s.server.enqueue(Reply(text="one"))
        ok = await s.client.post(f"{url}/messages", json={"content": "a"})
        s.server.enqueue(Fault.unauthorized())
        failed = await s.client.post(f"{url}/messages", json={"content": "b"})
        assert failed.status_code == 502
        call = ToolCallReply(name="bash", arguments={"command": "echo x"}, id="c1")
        s.server.enqueue(Reply(tool_calls=[call]))
        waiting = await s.client.post(f"{url}/messages", json={"content": "c"})
        assert waiting.status_code == 202
        s.server.enqueue(Reply(text="done"))
        resumed = await s.client.post(
            f"{url}/approve", json={"call_id": "c1", "decision": "allow_once"}
        )
        assert resumed.status_code == 200
        ids = [r.headers["x-duragent-turn"] for r in (ok, failed, waiting, resumed)]
        assert all(i.startswith("turn_") for i in ids)
        assert len(set(ids)) == 4
