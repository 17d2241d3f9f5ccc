"""An approval survives a real process restart: pause, SIGKILL, start again, approve, done."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from duragent.testing import Reply, ScriptedLLMServer, ToolCallReply
from tests.gateways.http.api_fixtures import write_workspace
from tests.polling import until_ready

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
            await until_ready(url, alive=lambda: first.poll() is None)
            async with httpx.AsyncClient(base_url=url, timeout=120) as client:
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
            first.wait(120)
        second = start(config, port)
        try:
            await until_ready(url, alive=lambda: second.poll() is None)
            async with httpx.AsyncClient(base_url=url, timeout=120) as client:
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
            second.wait(120)
    assert done.status_code == 200
    assert done.json()["content"] == "The command printed survived."
    tool = next(m for m in history if m["role"] == "tool")
    assert tool["call_id"] == "c1"
    assert "survived" in tool["content"]
    assert tool["success"] is True
