"""Measuring the simulated year's serving process: RSS, open files, threads, CPU, disk, /readyz.

``Probe`` samples the child every half second while it is up (never during a restart, which
``YearCampaign`` announces), asks ``/readyz`` each time and keeps the Telegram gateway's
states; ``open_files`` lists what its descriptors point at, by kind (read at the end).
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.year.campaign import YearCampaign
from duragent.testing.serve_process import ServeProcess

__all__ = ["Probe", "Sample", "disk_bytes", "open_files"]


@dataclass
class Sample:
    """One reading of the serving process and the workspace."""

    real: float
    sim_ms: int
    rss: int
    fds: int
    threads: int
    disk: int
    cpu: float
    """CPU seconds (user + system) the serving process used since it started."""


@dataclass
class Probe:
    """Samples the serving process and ``/readyz`` while it is up (module docstring)."""

    campaign: YearCampaign
    serve: ServeProcess
    workspace: Path
    every: float = 0.5
    disk_every: int = 6
    samples: list[Sample] = field(default_factory=list)
    readyz_checks: int = 0
    readyz_failures: list[str] = field(default_factory=list)
    states: dict[str, int] = field(default_factory=dict)
    cpu_by_pid: dict[int, float] = field(default_factory=dict)
    """The last CPU reading of each serving process (their sum: the year's serving CPU)."""
    """The Telegram gateway's states seen by ``/readyz`` (``reconnecting`` after a 502)."""
    _disk: int = 0

    async def run(self) -> None:
        n = 0
        async with httpx.AsyncClient(timeout=5) as client:
            while True:
                await asyncio.sleep(self.every)
                pid = self.serve.pid
                if pid is None or self.campaign.restarting is not None:
                    continue
                if n % self.disk_every == 0:
                    self._disk = disk_bytes(self.workspace)
                n += 1
                reading = _proc(pid)
                if reading is not None:
                    rss, fds, threads, cpu = reading
                    now = time.monotonic()
                    sim = self.campaign.clock.ms
                    self.samples.append(Sample(now, sim, rss, fds, threads, self._disk, cpu))
                    self.cpu_by_pid[pid] = cpu
                for other in self._other_pids(pid):  # a second node: its CPU counts too
                    other_reading = _proc(other)
                    if other_reading is not None:
                        self.cpu_by_pid[other] = other_reading[3]
                await self._readyz(client)

    def _other_pids(self, pid: int) -> list[int]:
        nodes = getattr(self.serve, "nodes", {})
        return [p for node in nodes.values() if (p := node.pid) is not None and p != pid]

    async def _readyz(self, client: httpx.AsyncClient) -> None:
        lifetime = len(self.serve.lifetimes)
        try:
            answer = await client.get(f"{self.serve.url}/readyz")
            state = str(answer.json().get("gateways", {}).get("telegram", ""))
            healthy = answer.status_code == 200
            problem = f"/readyz {answer.status_code}: {answer.text[:300]}"
            self.states[state.split(":")[0]] = self.states.get(state.split(":")[0], 0) + 1
        except (httpx.TransportError, ValueError) as exc:
            healthy, problem = False, f"/readyz: {type(exc).__name__}"
        if self.campaign.restarting is not None or len(self.serve.lifetimes) != lifetime:
            return  # a kill came while asking: not a health problem
        self.readyz_checks += 1
        if not healthy:
            self.readyz_failures.append(problem)


def _proc(pid: int) -> tuple[int, int, int, float] | None:
    """RSS (bytes), open files, threads and CPU seconds of ``pid`` (None once it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    cpu = (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    rss = int(fields.get("VmRSS", "0 kB").split()[0]) * 1024
    return rss, fds, int(fields.get("Threads", "0")), cpu


def open_files(pid: int, workspace: Path) -> dict[str, int]:
    """What ``pid``'s descriptors point at, by kind: a file of the workspace by its name
    (``events.jsonl``…), else socket, pipe, other anonymous inode, or another path."""
    kinds: dict[str, int] = {}
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return kinds
    for name in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if target.startswith(str(workspace)):
            kind = Path(target).name if "/sessions/" in target else target[len(str(workspace)) :]
        elif target.startswith(("socket:", "pipe:")):
            kind = target.split(":", 1)[0]
        elif target.startswith("anon_inode:"):
            kind = target
        else:
            kind = "other: " + target
        kinds[kind] = kinds.get(kind, 0) + 1
    return dict(sorted(kinds.items(), key=lambda kv: -kv[1]))


def disk_bytes(root: Path) -> int:
    """Bytes of every file under ``root``."""
    total = 0
    for folder, _dirs, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                continue
    return total
