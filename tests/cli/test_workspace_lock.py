"""One server per workspace, as real processes: a second `serve` fails at once naming the
first, a SIGKILLed server leaves no lock behind, and `chat` finds the running server."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from duragent.cli.scaffold import scaffold_workspace
from tests.cli.test_serve import free_port, start_serve, wait_ready


def offline_workspace(root: Path, port: int) -> Path:
    scaffold_workspace(root, "assistant", "offline", "echo")
    config = root / "duragent.yaml"
    text = config.read_text()
    config.write_text(text.replace("port: 8080", f"port: {port}"))
    assert f"port: {port}" in config.read_text()
    return config


def stop(proc: subprocess.Popen[str]) -> str:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out or ""


def test_a_second_serve_on_the_same_workspace_fails_at_once_naming_the_first(
    tmp_path: Path,
) -> None:
    config = offline_workspace(tmp_path / "ws", free_port())
    (tmp_path / "alias").symlink_to(tmp_path / "ws")  # another spelling of the same workspace
    first_port, second_port = free_port(), free_port()
    first = start_serve("-c", str(config), "--port", str(first_port))
    try:
        wait_ready(first_port, first)
        second = start_serve(
            "-c", str(tmp_path / "alias" / "duragent.yaml"), "--port", str(second_port)
        )
        try:
            out, _ = second.communicate(timeout=120)
        finally:
            if second.poll() is None:
                second.kill()
                second.communicate()
        assert second.returncode == 1, out
        assert f"is already served by PID {first.pid} at http://127.0.0.1:{first_port}" in out, out
        assert "Traceback" not in out
        assert httpx.get(f"http://127.0.0.1:{first_port}/livez").text == "ok"
    finally:
        out = stop(first)
    assert first.returncode == 0, out


def test_a_killed_server_leaves_no_lock_behind(tmp_path: Path) -> None:
    config = offline_workspace(tmp_path, free_port())
    port = free_port()
    first = start_serve("-c", str(config), "--port", str(port))
    wait_ready(port, first)
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=120)
    port = free_port()
    again = start_serve("-c", str(config), "--port", str(port))
    try:
        ready = wait_ready(port, again)
        assert ready.status_code == 200
        assert httpx.get(f"http://127.0.0.1:{port}/readyz").json()["pid"] == again.pid
    finally:
        out = stop(again)
    assert again.returncode == 0, out


def test_chat_talks_to_the_server_already_running_on_another_port(tmp_path: Path) -> None:
    configured = free_port()
    config = offline_workspace(tmp_path, configured)
    port = free_port()
    server = start_serve("-c", str(config), "--port", str(port))
    try:
        wait_ready(port, server)
        chat = subprocess.run(
            [sys.executable, "-m", "duragent", "chat", "-a", "assistant", "-c", str(config)],
            input="hello\n/exit\n",
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
        )
        assert chat.returncode == 0, chat.stderr
        sessions = httpx.get(f"http://127.0.0.1:{port}/api/v1/sessions").json()["sessions"]
        assert len(sessions) == 1  # the chat went to the running server
        time.sleep(0.5)  # a wrongly started second server would be listening by now
        try:
            httpx.post(f"http://127.0.0.1:{configured}/api/admin/v1/shutdown", timeout=5)
            started_another = True  # (and now stopped: no stray process after a failure)
        except httpx.TransportError:
            started_another = False
        assert not started_another
    finally:
        out = stop(server)
    assert server.returncode == 0, out


def test_two_chats_started_at_once_share_one_server(tmp_path: Path) -> None:
    port = free_port()
    config = offline_workspace(tmp_path, port)
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    command = [sys.executable, "-m", "duragent", "chat", "-a", "assistant", "-c", str(config)]
    chats = [
        subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=env,
        )
        for _ in range(2)
    ]
    try:
        results = [chat.communicate("hello\n/exit\n", timeout=60) for chat in chats]
        assert [chat.returncode for chat in chats] == [0, 0], results
        ready = httpx.get(f"http://127.0.0.1:{port}/readyz").json()
        sessions = httpx.get(f"http://127.0.0.1:{port}/api/v1/sessions").json()["sessions"]
        assert len(sessions) == 2
        holder = (tmp_path / ".duragent" / "serve.lock").read_text()
        assert f'"pid": {ready["pid"]}' in holder
    finally:
        for chat in chats:
            if chat.poll() is None:
                chat.kill()
        with contextlib.suppress(httpx.TransportError):
            httpx.post(f"http://127.0.0.1:{port}/api/admin/v1/shutdown", timeout=5)
