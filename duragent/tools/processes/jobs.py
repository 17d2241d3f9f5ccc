"""Starting and watching one job: a plain process group, or a tmux session.

A plain job (``backend: local``) starts through ``_process.launch``, the one function every
tool process starts through (so a sandbox wrapping it wraps jobs too): ``bash -c <command>``
in its own process group under a guardian, stdout and stderr appended to the
job's log file, stdin a pipe the ``write`` action writes to. When the command exits, what
is left of it is killed, detached or not (a job is never a leftover nothing tracks: see
``guardian``). Past its ``timeout_seconds`` the command's group gets SIGTERM, then everything
SIGKILL after ``KILL_GRACE_SECONDS``. If the server dies, the same happens at once: a plain
job does not outlive its server (the reference's jobs got SIGTERM through ``PDEATHSIG``).

A tmux job's command runs in the tmux server, not in ours, so it survives a restart; it is
watched by polling ``tmux has-session`` every ``poll`` seconds and its exit status read
from the log's ``EXIT_CODE:`` marker.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from duragent.tools._process import Launched, child_env, kill_group, launch
from duragent.tools.processes.meta import ProcessStatus
from duragent.tools.processes.tmux import Tmux, parse_exit_code
from duragent.tools.sandbox import Confinement

__all__ = [
    "KILL_GRACE_SECONDS",
    "LocalJob",
    "ProcessError",
    "SpawnRequest",
    "read_lines",
    "read_tail",
    "start_local",
    "watch_tmux",
]

KILL_GRACE_SECONDS = 5.0
STDIN_TIMEOUT_SECONDS = 10.0


class ProcessError(Exception):
    """An action the registry refused; the message is the reference's text."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SpawnRequest:
    """What ``spawn`` starts, and for whom."""

    command: str
    cwd: Path
    session_id: str
    agent: str
    env: Mapping[str, str] = field(default_factory=dict)
    label: str | None = None
    interactive: bool = False
    timeout_seconds: int = 1800
    gateway: str | None = None
    chat_id: str | None = None
    confine: Confinement | None = None
    """The call's sandbox (``sandbox.mode``); None: the server's own processes."""


@dataclass(slots=True)
class LocalJob:
    """A running plain job: its launch, and whether it was asked to stop."""

    launched: Launched
    killed: bool = False
    closed: bool = False

    @property
    def pgid(self) -> int:
        """The job's process group (its leader is ``bash``)."""
        return self.launched.pgid

    @property
    def stdin(self) -> asyncio.WriteTransport | None:
        """The command's stdin (None once closed)."""
        stdin = self.launched.stdin
        return None if stdin is None or stdin.is_closing() else stdin

    def kill(self) -> None:
        """Stop the job now (SIGKILL to all of it); ``run`` then reports ``killed``."""
        self.killed = True
        self.launched.kill()

    async def write(self, data: bytes) -> bool:
        """Write to the command's stdin; False if it did not drain within the time limit."""
        stdin = self.stdin
        if stdin is None:
            return False
        stdin.write(data)
        # The pipe buffers: wait (bounded) until it drained, so a stuck reader is reported.
        deadline = asyncio.get_running_loop().time() + STDIN_TIMEOUT_SECONDS
        while stdin.get_write_buffer_size() and not stdin.is_closing():
            if asyncio.get_running_loop().time() > deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    async def close(self) -> None:
        """Kill what is left of the job, reap it, release what watched it (idempotent)."""
        if self.closed:
            return
        self.closed = True
        self.launched.kill()
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            # reaped before the transport closes (else a running Popen is left behind)
            await asyncio.wait_for(self.launched.protocol.exited.wait(), KILL_GRACE_SECONDS)
        self.launched.release()
        self.launched.close()

    async def run(
        self, time_limit: float | None, grace: float = KILL_GRACE_SECONDS
    ) -> ProcessStatus:
        """Wait for the command to end (or time out), clean its group up, say how it ended."""
        exited = self.launched.protocol.exited
        status: ProcessStatus | None = None
        try:
            try:
                await asyncio.wait_for(asyncio.shield(exited.wait()), time_limit)
            except TimeoutError:
                kill_group(self.pgid, signal.SIGTERM)
                try:
                    await asyncio.wait_for(asyncio.shield(exited.wait()), grace)
                except TimeoutError:
                    self.launched.kill()
                    await exited.wait()
                status = ProcessStatus("timed_out")
        finally:  # cancelled too (the server stopping): nothing of the job survives
            await self.close()
        if status is not None:
            return status
        if self.killed:
            return ProcessStatus("killed")
        code = self.launched.transport.get_returncode()
        code = -1 if code is None else code
        return ProcessStatus("completed" if code == 0 else "failed", code)


async def start_local(
    command: str,
    *,
    cwd: Path,
    log_path: Path,
    env: Mapping[str, str],
    confine: Confinement | None = None,
) -> LocalJob:
    """Start ``bash -c <command>`` with its output appended to ``log_path``.

    Under a sandbox (``confine``) the job runs confined as a ``bash`` call does; its log is
    opened here, outside, and handed in as stdout and stderr (the job cannot see the log's
    folder, nor any other job's).

    Raises:
        OSError: the log could not be created or bash could not be started.
    """
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        launched = await launch(
            ["bash", "-c", command],
            cwd=cwd,
            env=child_env(env),
            stdout=fd,
            stderr=fd,
            keep_stdin=True,
            confine=confine,
        )
    finally:
        os.close(fd)  # the child holds its own copy
    return LocalJob(launched)


async def watch_tmux(
    tmux: Tmux,
    session: str,
    log_path: Path,
    *,
    time_limit: float | None,
    poll: float,
    killed: asyncio.Event,
) -> ProcessStatus:
    """Wait for a tmux job to end (or time out, or be killed); say how it ended."""

    async def gone() -> None:
        while await tmux.has_session(session):  # noqa: ASYNC110 (tmux has no exit event)
            await asyncio.sleep(poll)

    waiter = asyncio.ensure_future(gone())
    stopper = asyncio.ensure_future(killed.wait())
    try:
        done, _ = await asyncio.wait(
            {waiter, stopper}, timeout=time_limit, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        for task in (waiter, stopper):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if waiter not in done:
        await tmux.kill_session(session)
        return ProcessStatus("killed" if killed.is_set() else "timed_out")
    return tmux_outcome(log_path)


def tmux_outcome(log_path: Path) -> ProcessStatus:
    """How a tmux job that has ended went, from its log's marker (none: assume success)."""
    try:
        tail, _ = read_tail(log_path, 4096)
    except OSError:
        tail = ""
    code = parse_exit_code(tail)
    if code is None or code == 0:
        return ProcessStatus("completed", 0)
    return ProcessStatus("failed", code)


def read_tail(path: Path, max_bytes: int) -> tuple[str, bool]:
    """The last ``max_bytes`` of a log, starting at a whole line; and whether it was cut."""
    with path.open("rb") as file:
        size = file.seek(0, os.SEEK_END)
        start = max(0, size - max_bytes)
        file.seek(start)
        data = file.read()
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n")  # a tmux screen's
    if start > 0:
        newline = text.find("\n")
        if newline >= 0:
            text = text[newline + 1 :]
    return text, start > 0


def read_lines(path: Path, offset: int, limit: int) -> str:
    """Lines ``offset`` … ``offset + limit - 1`` of a log (0-based), joined by newlines."""
    lines: list[str] = []
    with path.open("r", encoding="utf-8", errors="replace") as file:
        for index, line in enumerate(file):
            if index < offset:
                continue
            if len(lines) >= limit:
                break
            lines.append(line.rstrip("\r\n"))
    return "\n".join(lines)
