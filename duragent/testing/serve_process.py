"""``duragent serve`` as a real child process: started, SIGKILLed, started again.

The restart campaigns (``duragent.testing.telegram_campaign`` and its Discord and external
gateway peers), the tests that kill a server and the gateway benchmarks (``bench/``) run the
serving process the way a user starts it, so a SIGKILL is a real crash and its CPU and memory
are its own.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

__all__ = ["ServeProcess", "free_port"]

ROOT = Path(__file__).resolve().parents[2]
"""The folder holding this ``duragent``: on the child's ``PYTHONPATH``, so it runs this copy."""


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServeProcess:
    """``duragent serve`` in a child process, started, SIGKILLed and started again.

    Every start appends to ``lifetimes`` a ``[started, ended]`` pair on ``time.monotonic()``
    (the clock the fakes stamp calls with), so a reply can be traced to the process
    that sent it. Each run's stderr goes to ``serve-<n>.log`` next to the config.
    """

    def __init__(
        self,
        config: Path,
        *,
        gateway: str = "telegram",
        command: list[str] | None = None,
        pythonpath: Sequence[Path] = (),
    ) -> None:
        self.config = config
        self.command = command
        """What to run instead of ``duragent serve -c <config>`` (``--port N`` is appended)."""
        self.pythonpath = [ROOT, *pythonpath]
        """The child's ``PYTHONPATH`` before the inherited one (a ``command`` run with ``-m``
        from another tree, such as ``bench``, names that tree here)."""
        self.gateway = gateway
        """The front end ``wait_ready`` waits for (its ``/readyz`` state ``running``)."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.name = "a"
        """The node this process is (``ServeNodes``; the fakes call the unprefixed one "a")."""
        self.lifetimes: list[list[float]] = []
        self.killed: list[bool] = []
        self.node_of_life: list[str] = []
        """Which node each life was (``ServeNodes`` shares these three lists among nodes)."""
        self._life = -1
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def life(self) -> int:
        """The index in ``lifetimes`` of this process's latest start (-1: never started)."""
        return self._life

    @property
    def pid(self) -> int | None:
        """The running process's id (None while none runs)."""
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        """Start ``duragent serve`` (or ``command``); its stderr goes to ``serve-<n>.log``."""
        n = len(self.lifetimes)
        log = (self.config.parent / f"serve-{n}.log").open("wb")
        env = os.environ.copy()
        paths = [*(str(p) for p in self.pythonpath), env.get("PYTHONPATH")]
        env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
        cmd = self.command or [sys.executable, "-m", "duragent", "serve", "-c", str(self.config)]
        self._proc = subprocess.Popen(
            [*cmd, "--port", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=env,
        )
        log.close()
        self._life = len(self.lifetimes)
        self.lifetimes.append([time.monotonic(), float("inf")])
        self.killed.append(False)
        self.node_of_life.append(self.name)

    def kill(self) -> None:
        """SIGKILL the running process and reap it."""
        assert self._proc is not None
        self._proc.send_signal(signal.SIGKILL)
        self._proc.wait(30)
        self.lifetimes[self._life][1] = time.monotonic()
        self.killed[self._life] = True
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
        self.lifetimes[self._life][1] = time.monotonic()
        self._proc = None

    def lifetime_of(self, at: float, node: str | None = None) -> int:
        """Which start (0-based) sent a call the fake stamped at monotonic time ``at``.

        ``node``: the node a fake attributed the call to (``ServeNodes``), if known.

        The last one started by then (-1: none). A call stamped after a process was killed
        and before the next start came from the killed one: its bytes were in the fake's
        socket when the kill landed, and the fake (on the campaign's loop) read them later
        (``kill_and_restart`` gives it that moment before the next start).
        """
        started = [
            i
            for i, (start, _end) in enumerate(self.lifetimes)
            if start <= at and (node is None or self.node_of_life[i] == node)
        ]
        return started[-1] if started else -1

    def resent_after_kill(self, earlier: int, later: int, at: float) -> bool:
        """Whether life ``later``'s copy at ``at`` is the documented resend of life ``earlier``'s.

        A process killed between sending something and recording that it did sends it again
        after its restart (or another node does). So a second copy is excused when the life
        that sent the first was killed before the second was sent, by another life. On one
        process that is "a later life, the earlier one killed"; with several nodes the
        survivor's life may have started before the victim's, so start order proves nothing.
        """
        return (
            earlier >= 0
            and later != earlier
            and self.killed[earlier]
            and self.lifetimes[earlier][1] <= at
        )

    async def wait_ready(
        self, within: float = 120.0, accept: tuple[str, ...] = ("running",)
    ) -> None:
        """Until ``/readyz`` answers 200 and ``gateway``'s state starts with one of ``accept``.

        A node of a cluster that another node's poller serves reports ``standby``.
        """
        deadline = time.monotonic() + within
        async with httpx.AsyncClient(timeout=5) as client:
            while time.monotonic() < deadline:
                if self._proc is not None and self._proc.poll() is not None:
                    logs = self.config.parent / "serve-*.log"
                    raise RuntimeError(f"duragent serve exited; see {logs}")
                try:
                    answer = await client.get(f"{self.url}/readyz")
                    if answer.status_code == 200:
                        state = str(answer.json().get("gateways", {}).get(self.gateway, ""))
                        if state.startswith(accept):
                            return
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.05)
        raise RuntimeError(f"duragent serve not ready within {within} s")
