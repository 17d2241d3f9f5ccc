"""A tool never runs before its call is on disk, and never outlives the server that ran it.

A real ``duragent serve`` child process runs ``bash`` through the agentic loop and is killed with
SIGKILL while the command sleeps; the files and the process table are the ground truth.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from pathlib import Path

import httpx

from duragent.core.events import EventType
from duragent.session.state import INTERRUPTED_RESULT
from duragent.testing import Reply, ScriptedLLMServer, ToolCallReply
from tests.cli.test_restart_approval import free_port, start
from tests.gateways.http.api_fixtures import write_workspace
from tests.polling import until_ready
from tests.session.crash_worker import wait_until_gone
from tests.session.test_crash_recovery import logged_events

TOOLS = "  tools:\n    - type: builtin\n      name: bash\n"


def read_if_written(path: Path) -> str:
    return path.read_text().strip() if path.exists() else ""


async def wait_for_file(path: Path) -> str:
    """The file's text once the tool has written it (120 s at most)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if text := read_if_written(path):
            return text
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


async def test_a_server_killed_while_a_tool_runs_has_the_call_on_disk_and_leaves_no_process(
    tmp_path: Path,
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    side = tmp_path / ".duragent" / "agents" / "bot" / "side"
    async with ScriptedLLMServer() as llm:
        write_workspace(tmp_path, llm.openai_base_url, tools=TOOLS)
        config = tmp_path / "duragent.yaml"
        llm.enqueue(
            Reply(
                tool_calls=[
                    ToolCallReply(
                        name="bash", arguments={"command": "echo $$ > side; sleep 30"}, id="c1"
                    )
                ]
            )
        )
        server = start(config, port)
        try:
            await until_ready(url, alive=lambda: server.poll() is None)
            async with httpx.AsyncClient(base_url=url, timeout=60) as client:
                sid = (await client.post("/api/v1/sessions", json={"agent": "bot"})).json()[
                    "session_id"
                ]
                turn = asyncio.create_task(
                    client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "go"})
                )
                pgid = int(await wait_for_file(side))  # the tool has started
                server.send_signal(signal.SIGKILL)
                server.wait(120)
                with contextlib.suppress(httpx.HTTPError):
                    await turn
        finally:
            if server.poll() is None:
                server.kill()
                server.wait(120)

        survivors = wait_until_gone(pgid)
        folder = tmp_path / ".duragent" / "sessions" / sid
        calls = [
            e
            for e in logged_events(folder)
            if e.type == EventType.ASSISTANT_RESPONSE and e.data.get("tool_calls")
        ]

        restarted = start(config, port)
        try:
            await until_ready(url, alive=lambda: restarted.poll() is None)
            async with httpx.AsyncClient(base_url=url, timeout=120) as client:
                info = (await client.get(f"/api/v1/sessions/{sid}")).json()
        finally:
            restarted.send_signal(signal.SIGTERM)
            restarted.wait(120)

    assert survivors == [], f"processes of the tool's group outlived the server: {survivors}"
    assert [c["call_id"] for e in calls for c in e.data["tool_calls"]] == ["c1"]
    events = logged_events(folder)
    call_seq = next(e.seq for e in events if e.data.get("tool_calls"))
    results = [e for e in events if e.type == EventType.TOOL_RESULT]
    assert [(r.data["call_id"], r.data["result"]["content"]) for r in results] == [
        ("c1", INTERRUPTED_RESULT)
    ]
    assert results[0].seq > call_seq
    assert info["status"] in ("active", "paused")
    assert json.dumps(INTERRUPTED_RESULT) in (folder / "events.jsonl").read_text()
