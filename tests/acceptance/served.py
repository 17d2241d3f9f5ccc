"""What a user has: a workspace folder, the ``duragent`` command and a server on a port.

The acceptance tests drive duragent only through its public surface: ``duragent ...`` in a
child process, files on disk, and the HTTP API of ``duragent serve``. This module holds that
surface's plumbing (a workspace written as a user writes one, the CLI run as a program, a
server started, probed for ``/readyz`` and stopped with SIGTERM), so each test reads as the
steps a user takes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import TracebackType

import httpx

from duragent.testing.serve_process import free_port

__all__ = ["Served", "Workspace", "run_cli"]

ROOT = Path(__file__).resolve().parents[2]

AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: {name}
spec:
  model:
    provider: offline
    name: duragent-offline
{extra}"""


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = os.environ.copy() | (extra or {})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    for name in ("DURAGENT_CONFIG", "DURAGENT_PORT", "DURAGENT_HOST", "DURAGENT_SERVER"):
        env.pop(name, None)
    return env


def run_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``duragent <args>`` in ``cwd``, as a user types it (output captured as text)."""
    return subprocess.run(
        [sys.executable, "-m", "duragent", *args],
        cwd=cwd,
        env=_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class Workspace:
    """A workspace folder: ``duragent.yaml`` and agent folders written as text."""

    def __init__(self, root: Path, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.env = dict(env or {})
        """Environment variables every command and server of this workspace gets."""
        root.mkdir(parents=True, exist_ok=True)
        self.config("")

    def config(self, yaml_text: str) -> None:
        """Write ``duragent.yaml``."""
        (self.root / "duragent.yaml").write_text(textwrap.dedent(yaml_text), encoding="utf-8")

    def agent(self, name: str = "assistant", spec_extra: str = "", policy: str = "") -> Path:
        """Write ``.duragent/agents/<name>/agent.yaml`` (offline model + ``spec_extra``)."""
        folder = self.root / ".duragent" / "agents" / name
        folder.mkdir(parents=True, exist_ok=True)
        text = AGENT.format(name=name, extra=spec_extra)
        (folder / "agent.yaml").write_text(text, encoding="utf-8")
        if policy:
            (folder / "policy.yaml").write_text(policy, encoding="utf-8")
        return folder

    def cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, cwd=self.root, env=self.env, timeout=timeout)

    def serve(self) -> Served:
        return Served(self)


class Served:
    """``duragent serve`` of a workspace on a free port, until the ``with`` block ends."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workspace.root / f"serve-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.http = httpx.Client(base_url=self.url, timeout=120)

    def __enter__(self) -> Served:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        self.http.close()

    def start(self, within: float = 60) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "duragent", "serve", "--port", str(self.port)],
                cwd=self.workspace.root,
                stdout=subprocess.DEVNULL,
                stderr=out,
                env=_env(self.workspace.env),
            )
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"duragent serve exited:\n{self.log.read_text()}")
            try:
                if self.http.get("/readyz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"not ready within {within} s:\n{self.log.read_text()}")

    def stop(self) -> None:
        """SIGTERM and wait (a clean stop: every session saved)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(120)

    # --- the HTTP API, as a client uses it ---------------------------------------------------

    def new_session(self, agent: str = "assistant") -> str:
        answer = self.http.post("/api/v1/sessions", json={"agent": agent})
        assert answer.status_code == 201, answer.text
        return str(answer.json()["session_id"])

    def ticking_schedule(self) -> str:
        """Create a schedule that sends "tick" every second; returns its id."""
        made = self.http.post(
            "/api/v1/schedules",
            json={
                "agent": "assistant",
                "schedule": {"every": {"every_seconds": 1}},
                "payload": {"message": {"message": "tick"}},
            },
        )
        assert made.status_code == 201, made.text
        return str(made.json()["id"])

    def say(self, session_id: str, text: str) -> httpx.Response:
        return self.http.post(f"/api/v1/sessions/{session_id}/messages", json={"content": text})

    def history(self, session_id: str) -> list[dict[str, object]]:
        answer = self.http.get(
            f"/api/v1/sessions/{session_id}/messages",
            params={"limit": 10000, "include_tools": "true"},
        )
        assert answer.status_code == 200, answer.text
        messages: list[dict[str, object]] = answer.json()["messages"]
        return messages
