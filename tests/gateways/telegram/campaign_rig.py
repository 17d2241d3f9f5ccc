"""The serving side of the Telegram restart campaign: a workspace and a killable ``duragent serve``.

The campaign (``restart_campaign.py``) kills the serving process with SIGKILL, so it runs as a
real subprocess, started the way a user starts it; the fake Telegram and the fake model live
in the campaign's own process and outlive every kill. Two agents share the bot:

- ``dm`` answers direct messages with the offline model (a reply quotes the message; a
  ``!call bash {...}`` line is a tool call) and asks before every ``bash`` (``mode: ask``);
- ``group`` answers mentions in groups through a model server the campaign scripts, which
  repeats the message and lists the group chatter it found in the request, so a reply shows
  whether the buffered chatter reached the model. Its queue is ``sequential`` without
  debounce, so each mention gets a reply of its own even while an earlier one runs.
"""

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

__all__ = ["TOKEN", "ServeProcess", "write_campaign_workspace"]

TOKEN = "123456:" + "C" * 35
"""A token that looks real (the config checks its shape); the fake accepts only this one."""

ROOT = Path(__file__).resolve().parents[3]

_CONFIG = """\
server:
  host: 127.0.0.1
gateways:
  telegram:
    bot_token: '{token}'
    base_url: {base_url}
    poll_timeout_seconds: 1
    max_messages_per_second: 100000
    max_messages_per_minute_per_group: 100000
    max_messages_per_second_per_chat: 100000
routes:
  - match: {{chat_type: dm}}
    agent: dm
  - match: {{chat_type: group}}
    agent: group
"""

_DM_AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: dm
spec:
  model:
    provider: offline
    name: duragent-offline
  tools:
    - type: builtin
      name: bash
"""

_GROUP_AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: group
spec:
  model:
    provider: fake
    name: gpt-4o
    base_url: {llm_url}
    max_input_tokens: 64000
    max_output_tokens: 500
  access:
    groups:
      activation: mention
      queue:
        mode: sequential
        max_pending: 50
        debounce:
          enabled: false
"""

_ASK = "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: ask\n"


def write_campaign_workspace(root: Path, *, telegram_url: str, llm_url: str) -> Path:
    """Write the campaign's workspace under ``root``; returns its ``duragent.yaml``."""
    config = root / "duragent.yaml"
    config.write_text(_CONFIG.format(token=TOKEN, base_url=telegram_url))
    dm = root / ".duragent" / "agents" / "dm"
    dm.mkdir(parents=True, exist_ok=True)
    (dm / "agent.yaml").write_text(_DM_AGENT)
    (dm / "policy.yaml").write_text(_ASK)
    group = root / ".duragent" / "agents" / "group"
    group.mkdir(parents=True, exist_ok=True)
    (group / "agent.yaml").write_text(_GROUP_AGENT.format(llm_url=llm_url))
    return config


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServeProcess:
    """``duragent serve`` in a child process, started, SIGKILLed and started again.

    Every start appends to ``lifetimes`` a ``[started, ended]`` pair on ``time.monotonic()``
    (the clock the fake Telegram stamps calls with), so a reply can be traced to the process
    that sent it. Each run's stderr goes to ``serve-<n>.log`` next to the config.
    """

    def __init__(self, config: Path) -> None:
        self.config = config
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.lifetimes: list[list[float]] = []
        self.killed: list[bool] = []
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        n = len(self.lifetimes)
        log = (self.config.parent / f"serve-{n}.log").open("wb")
        env = os.environ.copy()
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        cmd = [sys.executable, "-m", "duragent", "serve", "-c", str(self.config)]
        self._proc = subprocess.Popen(
            [*cmd, "--port", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=env,
        )
        log.close()
        self.lifetimes.append([time.monotonic(), float("inf")])
        self.killed.append(False)

    def kill(self) -> None:
        """SIGKILL the running process and reap it."""
        assert self._proc is not None
        self._proc.send_signal(signal.SIGKILL)
        self._proc.wait(30)
        self.lifetimes[-1][1] = time.monotonic()
        self.killed[-1] = True
        self._proc = None

    def stop(self) -> None:
        """SIGTERM (a clean shutdown), if still running."""
        if self._proc is None:
            return
        self._proc.send_signal(signal.SIGTERM)
        try:
            self._proc.wait(30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(10)
        self.lifetimes[-1][1] = time.monotonic()
        self._proc = None

    def lifetime_of(self, at: float) -> int:
        """Which start (0-based) sent a call the fake stamped at monotonic time ``at``.

        The last one started by then (-1: none). A call stamped after a process was killed
        and before the next start came from the killed one: its bytes were in the fake's
        socket when the kill landed, and the fake (on the campaign's loop) read them later
        (``kill_and_restart`` gives it that moment before the next start).
        """
        started = [i for i, (start, _end) in enumerate(self.lifetimes) if start <= at]
        return started[-1] if started else -1

    async def wait_ready(self, within: float = 60.0) -> None:
        """Until ``/readyz`` answers 200 and the Telegram gateway reports itself running."""
        deadline = time.monotonic() + within
        async with httpx.AsyncClient(timeout=5) as client:
            while time.monotonic() < deadline:
                if self._proc is not None and self._proc.poll() is not None:
                    logs = self.config.parent / "serve-*.log"
                    raise RuntimeError(f"duragent serve exited; see {logs}")
                try:
                    answer = await client.get(f"{self.url}/readyz")
                    if answer.status_code == 200:
                        state = str(answer.json().get("gateways", {}).get("telegram", ""))
                        if state.startswith("running"):
                            return
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.05)
        raise RuntimeError(f"duragent serve not ready within {within} s")
