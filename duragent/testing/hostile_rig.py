"""A real ``duragent serve`` process talking to the fake LLM in another process.

The hostile-model tests and ``bench/http/hostile_model.py`` run every attack against this pair:
the server is a child process (so its memory and liveness are its own), the fake model another
(so it survives the server being killed and restarted). Scripts are appended over the fake's
``POST /_fake/script``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, BinaryIO

import httpx

from duragent.testing.script import ScriptItem, item_to_json

__all__ = ["HostileRig"]

_AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: {name}
  description: hostile-model test agent
spec:
  model:
    provider: fake
    name: gpt-4o
    base_url: {base_url}
    max_input_tokens: 64000
    max_output_tokens: 500
  session:
    llm_timeout_seconds: 60
    context:
      summaries: {{enabled: false}}  # what is measured is the model's output, not history
{session}  tools:
    - type: builtin
      name: bash
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HostileRig:
    """The fake model process, the server process, and a client for both.

    The workspace in ``root`` has two agents with the ``bash`` tool: ``bot`` (policy mode
    ``dangerous``: calls run) and ``asker`` (mode ``ask``: calls wait for approval);
    ``session_yaml`` is added under both agents' ``spec.session``.
    """

    def __init__(self, root: Path, *, session_yaml: str = "") -> None:
        self.root = root
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.session_yaml = textwrap.indent(session_yaml, "    ")
        self.llm: subprocess.Popen[str] | None = None
        self.server: subprocess.Popen[bytes] | None = None
        self.llm_url = ""
        self.client = httpx.Client(base_url=self.url, timeout=120)

    # --- processes ---------------------------------------------------------------------------

    def start(self) -> HostileRig:
        """Start the fake model, write the workspace, start the server."""
        self.llm = subprocess.Popen(
            [sys.executable, "-m", "duragent.testing.fake_llm_server", "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.llm.stdout is not None
        line = self.llm.stdout.readline()
        self.llm_url = line.strip().rsplit(" ", 1)[-1]
        (self.root / "duragent.yaml").write_text("server:\n  host: 127.0.0.1\n")
        agents = self.root / ".duragent" / "agents"
        for name, mode in (("bot", "dangerous"), ("asker", "ask")):
            folder = agents / name
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "agent.yaml").write_text(
                _AGENT.format(name=name, base_url=self.llm_url + "/v1", session=self.session_yaml)
            )
            (folder / "policy.yaml").write_text(
                f"apiVersion: duragent/v1alpha1\nkind: Policy\nmode: {mode}\n"
            )
        self.start_server()
        return self

    def start_server(self) -> None:
        """Start ``duragent serve`` and wait until it is ready."""
        with (self.root / "server.log").open("ab") as log:
            self.server = self._spawn(log)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if self.client.get("/readyz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise AssertionError("duragent serve did not become ready")

    def _spawn(self, log: BinaryIO) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [
                *(sys.executable, "-m", "duragent", "serve"),
                *("-c", str(self.root / "duragent.yaml"), "--port", str(self.port)),
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=os.environ.copy(),
        )

    def kill_server(self) -> None:
        """SIGKILL the server (as a crash would)."""
        if self.server is not None:
            self.server.send_signal(signal.SIGKILL)
            self.server.wait(15)
            self.server = None

    def stop(self) -> None:
        """Stop both processes."""
        self.kill_server()
        if self.llm is not None:
            self.llm.terminate()
            try:
                self.llm.wait(10)
            except subprocess.TimeoutExpired:  # never leave it behind
                self.llm.kill()
                self.llm.wait(10)
            if self.llm.stdout is not None:
                self.llm.stdout.close()
            self.llm = None
        self.client.close()

    @property
    def server_pid(self) -> int:
        """The server process id."""
        assert self.server is not None
        return self.server.pid

    # --- conversation ---------------------------------------------------------------------

    def script(self, *items: ScriptItem) -> None:
        """Append answers to the fake model's script."""
        body = json.dumps([item_to_json(i) for i in items])  # ASCII: lone surrogates escaped
        answer = httpx.post(
            f"{self.llm_url}/_fake/script",
            content=body,
            headers={"content-type": "application/json"},
            timeout=60,
        )
        assert answer.status_code == 200, answer.text

    def new_session(self, agent: str = "bot") -> str:
        """A new session of ``agent``."""
        answer = self.client.post("/api/v1/sessions", json={"agent": agent})
        assert answer.status_code == 201, answer.text
        return str(answer.json()["session_id"])

    def send(self, sid: str, content: str) -> httpx.Response:
        """Send a message (the non-streaming endpoint)."""
        return self.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": content})

    def stream(self, sid: str, content: str) -> list[str]:
        """The SSE event names of a streamed turn, in order."""
        names: list[str] = []
        with self.client.stream(
            "POST", f"/api/v1/sessions/{sid}/stream", json={"content": content}
        ) as answer:
            names.extend(
                line.split(":", 1)[1].strip()
                for line in answer.iter_lines()
                if line.startswith("event:")
            )
        return names

    def history(self, sid: str) -> list[dict[str, Any]]:
        """The session's messages, tool calls and results included."""
        answer = self.client.get(
            f"/api/v1/sessions/{sid}/messages", params={"include_tools": "true", "limit": 1000}
        )
        assert answer.status_code == 200, answer.text
        messages: list[dict[str, Any]] = answer.json()["messages"]
        return messages
