"""``serve status|stop|reload-agents`` against a real ``duragent serve`` process."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from duragent.cli.main import app
from duragent.cli.serve_cmd import uptime
from duragent.config import load_workspace
from duragent.store.serve_lock import ServeLock, lock_files, read_holder
from tests.cli.test_serve import free_port

AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: {name}
spec:
  model:
    provider: offline
    name: duragent-offline
"""


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def cli(*args: str, cwd: Path) -> Ran:
    """The real command-line parser and commands, in this process (the server is another)."""
    before = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(app, list(args))
    finally:
        os.chdir(before)
    return Ran(result.exit_code, result.stdout, result.stderr)


def write_workspace(root: Path, port: int, *names: str) -> None:
    (root / "duragent.yaml").write_text(f"server:\n  host: 127.0.0.1\n  port: {port}\n")
    for name in names:
        add_agent(root, name)


def add_agent(root: Path, name: str) -> None:
    folder = root / ".duragent" / "agents" / name
    folder.mkdir(parents=True)
    (folder / "agent.yaml").write_text(AGENT.format(name=name))


def wait_held(root: Path, proc: subprocess.Popen[str]) -> None:
    ws = load_workspace(root)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        holder = read_holder(lock_files(ws.paths.workspace, ws.paths.sessions)[0])
        if holder is not None and holder.address:
            httpx.get(f"{holder.address}/livez", timeout=120)
            return
        if proc.poll() is not None:
            pytest.fail(f"serve exited: {proc.stdout.read() if proc.stdout else ''}")
        time.sleep(0.05)
    pytest.fail("the server did not start")


@contextlib.contextmanager
def serving(root: Path, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[str]]:
    """``duragent serve`` on a port other than the configured one (found by the lock)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "duragent", "serve", "-c", str(root), "-p", str(free_port())],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
    try:
        wait_held(root, proc)
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    write_workspace(tmp_path, free_port(), "assistant")
    with serving(tmp_path) as proc:
        yield proc


def test_status_without_a_server_says_so(tmp_path: Path) -> None:
    write_workspace(tmp_path, free_port(), "assistant")
    result = cli("serve", "status", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"No server running for {tmp_path}")


def test_stop_without_a_server_is_an_error(tmp_path: Path) -> None:
    write_workspace(tmp_path, free_port(), "assistant")
    result = cli("serve", "stop", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == f"error: no server running for {tmp_path}"


def test_status_reports_the_running_server_wherever_it_listens(
    tmp_path: Path, served: subprocess.Popen[str]
) -> None:
    result = cli("serve", "status", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Server running on port ")
    assert "  Status: ok" in lines
    assert f"  PID: {served.pid}" in lines
    assert any(line.startswith("  Started: ") and "(up " in line for line in lines)
    assert "  Agents: assistant" in lines
    assert f"  Workspace: {tmp_path}" in lines
    # -c before the subcommand (serve's own option) names the same workspace
    before = cli("serve", "-c", str(tmp_path / "duragent.yaml"), "status", cwd=tmp_path.parent)
    assert f"  PID: {served.pid}" in before.stdout.splitlines()


def test_reload_agents_loads_a_new_agent_into_the_running_server(
    tmp_path: Path, served: subprocess.Popen[str]
) -> None:
    add_agent(tmp_path, "helper")
    broken = tmp_path / ".duragent" / "agents" / "broken"
    broken.mkdir()
    (broken / "agent.yaml").write_text("apiVersion: duragent/v1alpha1\nkind: Agent\n")
    result = cli("serve", "reload-agents", "-c", str(tmp_path), cwd=tmp_path.parent)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Reloaded 2 agents"
    assert lines[1].startswith(f"  not loaded: {broken}: ")
    status = cli("serve", "status", cwd=tmp_path)
    assert "  Agents: assistant, helper" in status.stdout.splitlines()


DAILY = """\
  schedules:
    - name: daily
      schedule: {cron: {expr: "0 9 * * *"}}
      payload: {message: {message: "good morning"}}
"""


def listed_schedules(root: Path) -> list[str]:
    result = cli("schedule", "list", "--json", cwd=root)
    assert result.returncode == 0, result.stderr
    return [s["id"] for s in json.loads(result.stdout)["schedules"]]


def test_reload_agents_says_what_changed_and_takes_the_declared_schedules(
    tmp_path: Path, served: subprocess.Popen[str]
) -> None:
    agent_yaml = tmp_path / ".duragent" / "agents" / "assistant" / "agent.yaml"
    agent_yaml.write_text(AGENT.format(name="assistant") + DAILY)
    add_agent(tmp_path, "helper")
    result = cli("serve", "reload-agents", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "Reloaded 2 agents",
        "  agents added: helper",
        "  agents changed: assistant (spec.schedules)",
        "  schedules added: decl_assistant_daily",
    ]
    assert listed_schedules(tmp_path) == ["decl_assistant_daily"]
    agent_yaml.write_text(AGENT.format(name="assistant"))
    result = cli("serve", "reload-agents", cwd=tmp_path)
    assert result.stdout.splitlines()[1:] == [
        "  agents changed: assistant (spec.schedules)",
        "  schedules removed: decl_assistant_daily",
    ]
    assert listed_schedules(tmp_path) == []


def test_stop_shuts_the_server_down_gracefully_and_waits_for_it(
    tmp_path: Path, served: subprocess.Popen[str]
) -> None:
    result = cli("serve", "stop", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"(PID {served.pid})" in result.stdout
    assert result.stdout.splitlines()[-1] == "Server stopped"
    assert served.wait(timeout=120) == 0  # exits by itself, with success (the lock is free)
    out = served.stdout.read() if served.stdout else ""
    assert "stopped" in out
    assert "Traceback" not in out
    assert cli("serve", "status", cwd=tmp_path).stdout.startswith("No server running")


def test_stop_without_the_servers_admin_token_says_what_to_fix(tmp_path: Path) -> None:
    write_workspace(tmp_path, free_port(), "assistant")
    config = tmp_path / "duragent.yaml"
    config.write_text(config.read_text() + "  admin_token: ${TEST_ADMIN_TOKEN:-unset}\n")
    with serving(tmp_path, env={"TEST_ADMIN_TOKEN": "the-servers-token"}) as proc:
        result = cli("serve", "stop", cwd=tmp_path)  # this process resolves "unset"
        assert result.returncode == 1
        assert "the server refused the admin request (403" in result.stderr
        assert "must resolve here to the server's token" in result.stderr
        assert proc.poll() is None  # still serving


def test_options_of_a_new_server_are_refused_with_a_subcommand(tmp_path: Path) -> None:
    write_workspace(tmp_path, free_port(), "assistant")
    result = cli("serve", "--ephemeral", "5", "status", cwd=tmp_path)
    assert result.returncode == 2
    assert "--ephemeral applies only when starting a server" in result.stderr


def test_uptime_reads_like_a_duration() -> None:
    from datetime import UTC, datetime

    now = datetime(2026, 11, 24, 12, 0, 0, tzinfo=UTC)
    assert uptime("2026-11-24T11:58:55.000Z", now) == "1m 5s"
    assert uptime("2026-11-22T10:00:00Z", now) == "2d 2h 0s"
    assert uptime("garbage", now) is None


def test_status_of_a_server_that_holds_the_lock_but_does_not_answer(tmp_path: Path) -> None:
    write_workspace(tmp_path, free_port(), "assistant")
    ws = load_workspace(tmp_path)
    lock = ServeLock.acquire(ws.paths.workspace, ws.paths.sessions)  # bound nowhere yet
    try:
        result = cli("serve", "status", cwd=tmp_path)
    finally:
        lock.release()
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f"Server of {tmp_path} is starting or not answering (PID {os.getpid()})"
    )
