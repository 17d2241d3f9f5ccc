"""An approval survives a real process restart: pause, SIGKILL, start again, approve, done."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from duragent.testing import Reply, ScriptedLLMServer, ToolCallReply
from tests.gateways.http.api_fixtures import write_workspace

POLICY = "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: ask\n"
TOOLS = "  tools:\n    - type: builtin\n      name: bash\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(config: Path, port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "duragent", "serve", "-c", str(config), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=os.environ.copy(),
    )


async def wait_ready(url: str) -> None:
    deadline = time.monotonic() + 30
    async with httpx.AsyncClient() as client:
        while time.monotonic() < deadline:
            try:
                if (await client.get(f"{url}/readyz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.05)
    raise AssertionError("server did not start")


async def test_an_approval_pending_when_the_process_is_killed_completes_after_restart(
    tmp_path: Path,
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    async with ScriptedLLMServer() as llm:
        write_workspace(tmp_path, llm.openai_base_url, tools=TOOLS, policy=POLICY)
        config = tmp_path / "duragent.yaml"
        llm.enqueue(
            Reply(
                tool_calls=[
                    ToolCallReply(name="bash", arguments={"command": "echo survived"}, id="c1")
                ]
            ),
            Reply(text="The command printed survived."),
        )
        first = start(config, port)
        try:
            await wait_ready(url)
            async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                sid = (await client.post("/api/v1/sessions", json={"agent": "bot"})).json()[
                    "session_id"
                ]
                paused = await client.post(
                    f"/api/v1/sessions/{sid}/messages", json={"content": "run it"}
                )
                assert paused.status_code == 202
                assert paused.json()["call_id"] == "c1"
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(10)
        second = start(config, port)
        try:
            await wait_ready(url)
            async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                info = (await client.get(f"/api/v1/sessions/{sid}")).json()
                assert info["status"] == "paused"
                assert info["pending_approval"] is True
                done = await client.post(
                    f"/api/v1/sessions/{sid}/approve",
                    json={"call_id": "c1", "decision": "allow_once"},
                )
                history = (
                    await client.get(
                        f"/api/v1/sessions/{sid}/messages", params={"include_tools": "true"}
                    )
                ).json()["messages"]
        finally:
            second.send_signal(signal.SIGTERM)
            second.wait(15)
    assert done.status_code == 200
    assert done.json()["content"] == "The command printed survived."
    tool = next(m for m in history if m["role"] == "tool")
    assert tool["call_id"] == "c1"
    assert "survived" in tool["content"]
    assert tool["success"] is True
