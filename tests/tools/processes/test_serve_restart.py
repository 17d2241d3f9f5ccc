"""A real ``duragent serve`` SIGKILLed while its jobs run: no job is left untracked.

- A plain job dies with the server (its reaper kills the job's process group) and, when the
  server starts again, its session is told it was interrupted (``Status: lost``) and the
  agent answers that in the session.
- (slow) An interactive job's tmux session outlives the server: the next server re-attaches
  it, and when it ends later its session is told, as for a job that never saw a restart.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from duragent.testing import Reply, ScriptedLLMServer, ToolCallReply
from duragent.testing.serve_process import ServeProcess
from duragent.tools.processes.meta import pid_start_time
from tests.polling import eventually
from tests.tools.processes.helpers import needs_tmux
from tests.turns.turn_fixtures import agent_yaml

TOOLS = "  tools:\n    - {type: builtin, name: background_process}\n"


def spawn_calls(*spawns: dict[str, Any]) -> Reply:
    calls = [
        ToolCallReply(name="background_process", arguments={"action": "spawn", **args}, id=f"c{i}")
        for i, args in enumerate(spawns)
    ]
    return Reply(tool_calls=calls)


@asynccontextmanager
async def workspace(tmp_path: Path) -> AsyncIterator[tuple[ScriptedLLMServer, ServeProcess]]:
    async with ScriptedLLMServer() as llm:
        agent = tmp_path / ".duragent" / "agents" / "bot"
        agent.mkdir(parents=True)
        (agent / "agent.yaml").write_text(agent_yaml(llm.openai_base_url, model_extra=TOOLS))
        config = tmp_path / "duragent.yaml"
        config.write_text("server:\n  host: 127.0.0.1\n")
        serve = ServeProcess(config)
        try:
            yield llm, serve
        finally:
            serve.stop()


async def ready(serve: ServeProcess, within: float = 120.0) -> None:
    deadline = time.monotonic() + within
    async with httpx.AsyncClient(timeout=5) as client:
        while time.monotonic() < deadline:
            try:
                if (await client.get(f"{serve.url}/readyz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.05)
    raise AssertionError("duragent serve did not become ready")


async def history(client: httpx.AsyncClient, serve: ServeProcess, sid: str) -> list[dict[str, Any]]:
    answer = await client.get(f"{serve.url}/api/v1/sessions/{sid}/messages")
    messages: list[dict[str, Any]] = answer.json()["messages"]
    return messages


async def until_replied(
    client: httpx.AsyncClient, serve: ServeProcess, sid: str, text: str, within: float = 60.0
) -> list[dict[str, Any]]:
    async def replied() -> bool:
        messages = await history(client, serve, sid)
        return any(m["role"] == "assistant" and m["content"] == text for m in messages)

    assert await eventually(replied, within=within), await history(client, serve, sid)
    return await history(client, serve, sid)


def jobs(tmp_path: Path) -> dict[str, dict[str, Any]]:
    folder = tmp_path / ".duragent" / "processes"
    docs = [json.loads(p.read_text()) for p in folder.glob("*.meta.json")]
    return {doc["label"]: doc for doc in docs}


async def test_a_plain_job_dies_with_a_killed_server_and_its_session_hears_it_after_restart(
    tmp_path: Path,
) -> None:
    async with workspace(tmp_path) as (llm, serve), httpx.AsyncClient(timeout=120) as client:
        serve.start()
        await ready(serve)
        sid = (await client.post(f"{serve.url}/api/v1/sessions", json={"agent": "bot"})).json()[
            "session_id"
        ]
        llm.enqueue(spawn_calls({"command": "sleep 60", "label": "long"}), Reply(text="Started."))
        sent = await client.post(
            f"{serve.url}/api/v1/sessions/{sid}/messages", json={"content": "run it"}
        )
        assert sent.json()["content"] == "Started."
        job = jobs(tmp_path)["long"]
        assert job["status"] == {"state": "running"}
        serve.kill()
        # the reaper killed it with the server
        assert await eventually(lambda: pid_start_time(job["pid"]) is None)
        llm.enqueue(Reply(text="The long job was interrupted by a restart."))
        serve.start()
        await ready(serve)
        messages = await until_replied(
            client, serve, sid, "The long job was interrupted by a restart."
        )
        job = jobs(tmp_path)["long"]
    notices = [m["content"] for m in messages if m["role"] == "user"]
    assert notices[-1].startswith("[Background Process Completed]")
    assert "Label: long" in notices[-1]
    assert "Status: lost" in notices[-1]
    assert job["status"] == {"state": "lost"}
    assert job["notified"] is True


@pytest.mark.slow
@needs_tmux
async def test_an_interactive_job_outlives_a_killed_server_and_is_reattached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmux_dir = Path(tempfile.mkdtemp(prefix="dg-tmux-"))  # a short path: socket names are short
    monkeypatch.setenv("TMUX_TMPDIR", str(tmux_dir))  # the children's private tmux server
    gate = tmp_path / "go"
    try:
        async with workspace(tmp_path) as (llm, serve), httpx.AsyncClient(timeout=120) as client:
            serve.start()
            await ready(serve)
            created = await client.post(f"{serve.url}/api/v1/sessions", json={"agent": "bot"})
            sid = created.json()["session_id"]
            command = f"until [ -e {gate} ]; do sleep 0.05; done; echo finished"
            llm.enqueue(
                spawn_calls({"command": command, "label": "tui", "interactive": True}),
                Reply(text="Started."),
            )
            await client.post(f"{serve.url}/api/v1/sessions/{sid}/messages", json={"content": "go"})
            session_name = jobs(tmp_path)["tui"]["tmux_session"]
            serve.kill()
            alive = await asyncio.create_subprocess_exec("tmux", "has-session", "-t", session_name)
            assert await alive.wait() == 0  # the job outlived its server
            llm.enqueue(Reply(text="The interactive job finished."))
            serve.start()
            await ready(serve)
            await asyncio.sleep(0.5)
            assert jobs(tmp_path)["tui"]["status"] == {"state": "running"}  # re-attached
            gate.touch()
            messages = await until_replied(client, serve, sid, "The interactive job finished.")
        notice = [m["content"] for m in messages if m["role"] == "user"][-1]
        assert "Label: tui" in notice
        assert "Status: completed (exit 0)" in notice
        assert "finished" in notice
    finally:
        killer = await asyncio.create_subprocess_exec(
            "tmux", "kill-server", stderr=asyncio.subprocess.DEVNULL
        )
        await killer.wait()
        shutil.rmtree(tmux_dir, ignore_errors=True)
