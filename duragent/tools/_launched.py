"""A started tool process, and how it is ended (``_process`` starts it).

A tool process is ended two ways: by a signal to its process group (``kill_group``: SIGTERM
for a job's time limit), and by ``Launched.kill``, which SIGKILLs all of it. Under a guardian
(``guardian``) that means cutting the guardian's lifeline, never signalling the guardian
itself: it kills everything below it, detached or not, then exits with the program's status.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
from dataclasses import dataclass

from duragent.tools._reaper import release_group

__all__ = ["ExitProtocol", "Launched", "kill_group"]


def kill_group(pgid: int, sig: signal.Signals = signal.SIGKILL) -> None:
    """Send ``sig`` to process group ``pgid`` (harmless once the group is gone)."""
    # The group id is the leader's pid. Once the group is empty the call fails harmlessly.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


class ExitProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """The stream protocol plus an event set the moment the command itself exits.

    ``Process.wait()`` (Python 3.11) returns only once the pipes are closed too, so a
    background child holding stdout would keep it waiting until the time limit.
    """

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit, loop)
        self.exited = asyncio.Event()

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()


@dataclass(slots=True)
class Launched:
    """A started tool process: its transport, its protocol and its process group."""

    transport: asyncio.SubprocessTransport
    protocol: ExitProtocol
    pgid: int
    """The program's process group (its pid: it leads its own session)."""
    stdin: asyncio.WriteTransport | None
    """The program's stdin when ``keep_stdin`` was asked for (else it reads /dev/null)."""
    lifeline: socket.socket | None = None
    """The server's end of the guardian's lifeline (None once cut)."""
    guarded: bool = False
    """Started under a guardian (else: behind the gate, watched by the reaper)."""

    def kill(self) -> None:
        """SIGKILL the program and everything it started, detached or not (idempotent).

        With the guardian: cut its lifeline (it kills what is below it, then exits; never
        SIGKILL the guardian itself, which would leave its subtree to init). Without: SIGKILL
        the program's group.
        """
        if self.lifeline is not None:
            self.lifeline.close()
            self.lifeline = None
        elif not self.guarded:
            kill_group(self.pgid)

    def release(self) -> None:
        """After the kill: free the lifeline, or the reaper's entry (its pgid may be reused).

        Under a guardian the program's group is SIGKILLed too: a guardian killed on its own
        (by hand, the OOM killer) has left the program to init, and its end ends the call.
        """
        self.kill()
        if self.guarded:
            kill_group(self.pgid)
        else:
            release_group(self.pgid)

    def close(self) -> None:
        """Close the transport, once the guardian has exited if there is one.

        Closing a running process's transport SIGKILLs it: a guardian still killing what is
        below it (the caller was cancelled) would leave the rest to init.
        """
        if not self.guarded or self.transport.get_returncode() is not None:
            self.transport.close()
            return
        task = asyncio.ensure_future(self._close_once_exited())
        _closing.add(task)
        task.add_done_callback(_closing.discard)

    async def _close_once_exited(self) -> None:
        try:
            await self.protocol.exited.wait()
        finally:
            self.transport.close()
            _reap(self.transport)


def _reap(transport: asyncio.SubprocessTransport) -> None:
    """Wait for a guardian the close just killed (its loop ended before it exited).

    Closing a running process's transport SIGKILLs it but nobody waits for it any more: the
    process stays a zombie and its ``Popen`` warns "still running" wherever it is collected
    (a test suite saw that warning land on an unrelated test). Right after SIGKILL the wait
    is a few milliseconds; it happens only when the wait for the exit was cancelled.
    """
    popen = transport.get_extra_info("subprocess")
    if isinstance(popen, subprocess.Popen) and popen.returncode is None:
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            popen.wait(timeout=1.0)


_closing: set[asyncio.Future[None]] = set()
"""Transports waiting for their guardian to exit (a reference, so the task is not collected)."""
