"""A real ``duragent serve`` whose agent fetches hostile URLs keeps serving and keeps secrets.

The scripted model makes the agent call ``web`` on (1) a 2 KB ``gzip, gzip`` body holding
1 GiB of zeros, on a local server the agent's ``allow_private`` opens, while the test polls
``/livez`` and reads the server's peak memory; and (2) the server's own API, which the same
agent may not reach because only the bomb server's port is allowed.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from duragent.core.events import EventType
from duragent.testing import Reply, ScriptedLLMServer, ToolCallReply
from tests.cli.test_restart_approval import free_port, start
from tests.gateways.http.api_fixtures import write_workspace
from tests.polling import until_ready
from tests.session.test_crash_recovery import logged_events
from tests.tools.local_http import serving

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def bomb_port() -> Iterator[int]:
    inner = zlib.compressobj(9, zlib.DEFLATED, 31)
    middle = b"".join(inner.compress(bytes(MIB)) for _ in range(1024)) + inner.flush()
    outer = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = outer.compress(middle) + outer.flush()

    async def serve_bomb(request: Request) -> Response:
        return Response(bomb, media_type="text/html", headers={"Content-Encoding": "gzip, gzip"})

    with serving(Starlette(routes=[Route("/bomb", serve_bomb)])) as port:
        yield port


def vm_hwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


async def run_turn_watching_livez(
    client: httpx.AsyncClient, sid: str
) -> tuple[httpx.Response, float]:
    """Post one message; meanwhile the longest ``/livez`` answer time, in seconds."""
    turn = asyncio.create_task(
        client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "go"})
    )
    worst = 0.0
    while not turn.done():
        started = time.monotonic()
        assert (await client.get("/livez", timeout=30)).status_code == 200
        worst = max(worst, time.monotonic() - started)
        await asyncio.sleep(0.02)
    return await turn, worst


def tool_results(root: Path, sid: str) -> list[str]:
    folder = root / ".duragent" / "sessions" / sid
    return [
        str(e.data["result"]["content"])
        for e in logged_events(folder)
        if e.type == EventType.TOOL_RESULT
    ]


async def test_a_served_agent_fetching_a_bomb_and_its_own_api_stays_live_and_learns_nothing(
    tmp_path: Path, bomb_port: int
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    tools = (
        "  tools:\n    - type: builtin\n      name: web\n"
        f"      allow_private: ['127.0.0.1:{bomb_port}']\n"
    )
    async with ScriptedLLMServer() as llm:
        write_workspace(tmp_path, llm.openai_base_url, tools=tools)
        server = start(tmp_path / "duragent.yaml", port)
        try:
            await until_ready(url, alive=lambda: server.poll() is None)
            async with httpx.AsyncClient(base_url=url, timeout=60) as client:
                victim = (await client.post("/api/v1/sessions", json={"agent": "bot"})).json()
                spy = (await client.post("/api/v1/sessions", json={"agent": "bot"})).json()
                llm.enqueue(Reply(text="hello"))  # warm up: tokenizer and turn machinery
                await client.post(
                    f"/api/v1/sessions/{spy['session_id']}/messages", json={"content": "hi"}
                )
                before = vm_hwm_mb(server.pid)
                bomb_url = f"http://127.0.0.1:{bomb_port}/bomb"
                llm.enqueue(
                    Reply(
                        tool_calls=[
                            ToolCallReply(
                                name="web", arguments={"action": "fetch", "url": bomb_url}
                            )
                        ]
                    ),
                    Reply(text="read it"),
                )
                answered, worst = await run_turn_watching_livez(client, spy["session_id"])
                growth = vm_hwm_mb(server.pid) - before
                own_api = f"{url}/api/v1/sessions/{victim['session_id']}/messages"
                llm.enqueue(
                    Reply(
                        tool_calls=[
                            ToolCallReply(name="web", arguments={"action": "fetch", "url": own_api})
                        ]
                    ),
                    Reply(text="no luck"),
                )
                await client.post(
                    f"/api/v1/sessions/{spy['session_id']}/messages", json={"content": "again"}
                )
        finally:
            server.kill()
            server.wait(120)
    print(f"livez worst {worst:.3f} s, server peak memory growth {growth:.0f} MB")
    assert answered.status_code < 400, answered.text
    bomb_result, own_result = tool_results(tmp_path, spy["session_id"])
    assert bomb_result.startswith(f"URL: http://127.0.0.1:{bomb_port}/bomb")
    assert len(bomb_result) < 100_000
    # The stall came from one zlib call decoding the whole GiB on the event loop: a peak
    # memory growth under 100 MB rules that call out. ``/livez`` stayed answering (each
    # poll above must answer 200); how fast is printed, not asserted (issue 34).
    assert growth < 100
    assert "refused" in own_result
    assert "a loopback address" in own_result
