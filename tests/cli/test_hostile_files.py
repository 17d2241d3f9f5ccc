"""One agent's deeply nested file does not take `serve` or `doctor` down.

A 100 KB agent.yaml or policy.yaml of brackets (~50,000 levels) made libyaml crash the whole
process with SIGSEGV (exit 139). The commands run as child processes here, so a crash fails
the test instead of killing the test runner.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx

from duragent.testing import Reply, ScriptedLLMServer
from tests.cli.test_restart_approval import free_port, start
from tests.gateways.http.api_fixtures import write_workspace
from tests.polling import until_ready

DEEP = "[" * 50_000 + "]" * 50_000


def add_agents(root: Path) -> None:
    """Next to the good agent ``bot``: ``deep`` (nested agent.yaml) and ``pol`` (nested policy)."""
    agents = root / ".duragent" / "agents"
    for name in ("deep", "pol"):
        shutil.copytree(agents / "bot", agents / name)
        text = (agents / "bot" / "agent.yaml").read_text().replace("name: bot", f"name: {name}")
        (agents / name / "agent.yaml").write_text(text)
    (agents / "deep" / "agent.yaml").write_text(text.replace("description: test bot", f"x: {DEEP}"))
    (agents / "pol" / "policy.yaml").write_text(f"apiVersion: duragent/v1alpha1\nmode: {DEEP}\n")


def test_doctor_reports_the_nested_agent_and_checks_the_others(tmp_path: Path) -> None:
    write_workspace(tmp_path, "http://127.0.0.1:9/v1")
    add_agents(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "duragent", "doctor", "-c", str(tmp_path / "duragent.yaml")],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=120,
    )
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    assert "nested more than" in done.stdout
    assert "agent deep" in done.stdout
    assert "agent bot" in done.stdout


async def test_serve_keeps_serving_the_other_agents_when_one_has_nested_files(
    tmp_path: Path,
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    async with ScriptedLLMServer() as llm:
        write_workspace(tmp_path, llm.openai_base_url)
        add_agents(tmp_path)
        server = start(tmp_path / "duragent.yaml", port)
        try:
            await until_ready(url, alive=lambda: server.poll() is None)
            async with httpx.AsyncClient(base_url=url, timeout=60) as client:
                names = [a["name"] for a in (await client.get("/api/v1/agents")).json()["agents"]]
                assert names == ["bot", "pol"]
                pol = (await client.post("/api/v1/sessions", json={"agent": "pol"})).json()
                llm.enqueue(Reply(text="from pol"), Reply(text="from bot"))
                turn = await client.post(
                    f"/api/v1/sessions/{pol['session_id']}/messages", json={"content": "hi"}
                )
                assert turn.status_code == 502
                assert "nested more than" in turn.text
                bot = (await client.post("/api/v1/sessions", json={"agent": "bot"})).json()
                reply = await client.post(
                    f"/api/v1/sessions/{bot['session_id']}/messages", json={"content": "hi"}
                )
                assert reply.status_code == 200
                assert (await client.get("/livez")).status_code == 200
            assert server.poll() is None
        finally:
            server.kill()
            server.wait()
