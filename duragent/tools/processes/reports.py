"""What a job tells its session, and when: the port, the messages, the silence watch.

- ``ProcessEvents``: the port the runtime implements (``frontkit.ProcessNotices``), so the
  tools layer never runs a turn itself.
- ``completion_message`` / ``halted_message``: the reference's texts (a ``lost`` job says
  why it ended).
- ``Dedupe``: a second report of the same kind for the same job within two seconds is
  dropped (a burst of exits and watch ticks is one report), as the reference does.
- ``watch_silence``: the ``watch`` action's loop: the log's size is polled; once it stays
  the same for ``silence`` seconds the job is reported once, and not again until output
  resumes and falls silent again (the reference's stream watcher).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol

from duragent.tools.processes.jobs import read_tail
from duragent.tools.processes.meta import ProcessMeta, now

__all__ = [
    "COMPLETION_TAIL_BYTES",
    "DEDUPE_SECONDS",
    "Dedupe",
    "ProcessEvents",
    "completion_message",
    "halted_message",
    "watch_silence",
]

COMPLETION_TAIL_BYTES = 2000
DEDUPE_SECONDS = 2.0


class ProcessEvents(Protocol):
    """Port: hand a job's news to the session that spawned it (implemented by the runtime)."""

    async def process_ended(self, meta: ProcessMeta, message: str) -> None:
        """The job ended: add ``message`` to ``meta.session_id`` and have the agent answer."""
        ...

    async def screen_halted(self, meta: ProcessMeta, message: str) -> None:
        """A watched job's output fell silent: the same, for the watch's message."""
        ...


def completion_message(meta: ProcessMeta) -> str:
    """The reference's ``[Background Process Completed]`` message, with the log's tail."""
    try:
        tail, cut = read_tail(meta.log_path, COMPLETION_TAIL_BYTES)
        output = f"...\n{tail}" if cut else tail
    except OSError:
        output = "(log unavailable)"
    ended = meta.completed_at or now()
    duration = max(0, int((ended - meta.spawned_at).total_seconds()))
    label = f"\nLabel: {meta.label}" if meta.label else ""
    note = ""
    if meta.status.state == "lost":
        note = "\n(The server stopped while this process ran; the process was stopped too.)"
    return (
        f"[Background Process Completed]\n\nHandle: {meta.handle}{label}\n"
        f"Command: {meta.command}\nStatus: {meta.status}{note}\nDuration: {duration}s\n\n"
        f"Output (last {COMPLETION_TAIL_BYTES} bytes):\n{output}"
    )


def halted_message(handle: str) -> str:
    """The reference's message when a watched job's output stops."""
    return (
        f"[Process {handle} screen halted]\n\nThe interactive process screen has stopped "
        "changing. Use background_process capture to check if it needs input."
    )


class Dedupe:
    """Remembers recent reports, by (kind, handle), for ``DEDUPE_SECONDS``."""

    def __init__(self) -> None:
        self._recent: dict[tuple[str, str], float] = {}

    def fresh(self, kind: str, handle: str) -> bool:
        """False for a second report of the same kind and job within the window."""
        clock = asyncio.get_running_loop().time()
        last = self._recent.get((kind, handle))
        if last is not None and clock - last < DEDUPE_SECONDS:
            return False
        self._recent = {k: t for k, t in self._recent.items() if clock - t < DEDUPE_SECONDS}
        self._recent[(kind, handle)] = clock
        return True

    def forget(self, kind: str, handle: str) -> None:
        """The report failed: a retry is not a duplicate."""
        self._recent.pop((kind, handle), None)


async def watch_silence(
    log_path: Path,
    silence: float,
    poll: float,
    running: Callable[[], bool],
    fire: Callable[[], Awaitable[None]],
) -> None:
    """Report (``fire``) once each time the log stays unchanged for ``silence`` seconds."""
    loop = asyncio.get_running_loop()
    size, quiet_since, fired = -1, loop.time(), False
    while running():
        await asyncio.sleep(min(poll, max(silence / 4, 0.05)))
        try:
            current = os.stat(log_path).st_size  # a cheap syscall, as the reference
        except OSError:
            continue
        if current != size:
            size, quiet_since, fired = current, loop.time(), False
        elif not fired and loop.time() - quiet_since >= silence:
            fired = True
            await fire()
