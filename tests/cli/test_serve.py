"""The README's first command: `duragent serve` on the examples workspace, as a real process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "duragent.yaml"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_serve(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "duragent", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )


def wait_ready(port: int, proc: subprocess.Popen[str], timeout: float = 120) -> httpx.Response:
    """Until ``/livez`` answers; the deadline is generous (a loaded machine starts slowly)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            pytest.fail(f"serve exited with {proc.returncode}:\n{out}")
        try:
            return httpx.get(f"http://127.0.0.1:{port}/livez", timeout=1)
        except httpx.TransportError:
            time.sleep(0.05)
    proc.kill()
    pytest.fail("server did not become ready")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_on_the_examples_answers_health_and_stops_gracefully(sig: signal.Signals) -> None:
    port = free_port()
    proc = start_serve("-c", str(EXAMPLES), "--port", str(port))
    try:
        live = wait_ready(port, proc)
        assert live.status_code == 200
        assert live.text == "ok"
        ready = httpx.get(f"http://127.0.0.1:{port}/readyz").json()
        assert ready["status"] == "ok"
        assert len(ready["workspace_hash"]) == 64
        agents = httpx.get(f"http://127.0.0.1:{port}/api/v1/agents").json()["agents"]
        assert [a["name"] for a in agents] == ["assistant"]
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert "offline model" in out  # honestly labelled
    assert "stopped" in out
    assert "Traceback" not in out


def test_a_busy_port_is_one_clear_error_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = start_serve("-c", str(EXAMPLES), "--port", str(port))
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1
    assert f"error: cannot listen on 127.0.0.1:{port}" in out
    assert "--port" in out
    assert "Traceback" not in out


def test_a_broken_config_is_reported_with_file_and_line_and_verbose_adds_the_traceback(
    tmp_path: Path,
) -> None:
    config = tmp_path / "duragent.yaml"
    config.write_text("server:\n  port: 8080\nsessions:\n  compaction: shred\n")
    proc = start_serve("-c", str(config))
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1
    assert f"error: {config}:4: sessions.compaction: invalid value" in out
    assert "'shred'" in out
    assert all(mode in out for mode in ("discard", "archive", "disabled"))
    assert "Traceback" not in out
    verbose = subprocess.run(
        [sys.executable, "-m", "duragent", "-v", "serve", "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert verbose.returncode == 1
    assert "Traceback" in verbose.stderr


def test_serve_without_a_workspace_says_how_to_make_one(tmp_path: Path) -> None:
    proc = start_serve("-c", str(tmp_path / "duragent.yaml"))
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1
    assert "duragent init" in out


def test_serve_logs_a_broken_agents_error_once_and_a_shared_warning_once(
    tmp_path: Path,
) -> None:
    (tmp_path / "duragent.yaml").write_text("")
    agent = (
        "apiVersion: duragent/v1alpha1\nkind: Agent\nmetadata:\n  name: {name}\nspec:\n"
        "  model:\n    provider: offline\n    name: duragent-offline\n{extra}"
    )
    broken_extra = "  session:\n    max_tool_iterations: ten\n"
    for name, extra in (("ada", ""), ("bob", ""), ("broken", broken_extra)):
        folder = tmp_path / ".duragent" / "agents" / name
        folder.mkdir(parents=True)
        (folder / "agent.yaml").write_text(agent.format(name=name, extra=extra))
    port = free_port()
    proc = start_serve("-c", str(tmp_path / "duragent.yaml"), "--port", str(port))
    try:
        wait_ready(port, proc)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert out.count("spec.session.max_tool_iterations") == 1, out  # not logged twice
    assert "agent broken not loaded" in out
    assert "must be a whole number (got 'ten')" in out
    assert out.count("offline model") == 1, out
    assert "agents 'ada', 'bob' use the offline model" in out
