"""The jobs a registry knows: each one's record on disk and in memory, and who may see it.

``ProcessRegistry`` runs jobs (spawns, watches, reports, recovers them); this is the table it
keeps them in, apart so the rules every action relies on are in one short place: a state
change is written to the job's meta file before memory holds it (``_set``), a job out of the
caller's ``Reach`` is "not found" exactly like a missing one (``owned``), and ended jobs are
forgotten, their two files deleted, ``cleanup_after`` seconds after they ended, once
reported (``cleanup``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from duragent.tools.processes.jobs import LocalJob, ProcessError, read_lines
from duragent.tools.processes.meta import ProcessMeta, Reach, meta_path, now, write_meta

__all__ = ["CLEANUP_AFTER_SECONDS", "JobTable", "TrackedJob"]

log = logging.getLogger(__name__)

CLEANUP_AFTER_SECONDS = 30 * 60.0


@dataclass(slots=True)
class TrackedJob:
    """One job: its last recorded meta and, while it runs here, what watches it."""

    meta: ProcessMeta
    local: LocalJob | None = None
    killed: asyncio.Event = field(default_factory=asyncio.Event)
    done: asyncio.Future[ProcessMeta] | None = None
    watcher: asyncio.Task[None] | None = None
    waited: bool = False  # a ``wait: true`` caller took the outcome as its tool result


class JobTable:
    """Every job of ``directory`` by handle (see module docstring)."""

    def __init__(self, directory: Path, *, cleanup_after: float = CLEANUP_AFTER_SECONDS) -> None:
        self.directory = directory
        self.cleanup_after = cleanup_after
        self._entries: dict[str, TrackedJob] = {}

    def owned(self, handle: str, reach: Reach) -> TrackedJob:
        """The job, if ``reach`` lets the caller see it (ProcessError otherwise).

        A job out of reach is "not found", exactly like a missing one: a chat must not
        learn another chat's handles.
        """
        entry = self._entries.get(handle)
        if entry is None or not reach(entry.meta):
            raise ProcessError(f"process not found: {handle}")
        return entry

    def running(self, handle: str, reach: Reach) -> TrackedJob:
        """The job if the caller reaches it and it still runs."""
        entry = self.owned(handle, reach)
        if entry.meta.status.terminal:
            raise ProcessError("process is not running")
        return entry

    def get(self, handle: str) -> ProcessMeta | None:
        """A job's meta, whoever owns it (for tests and the runtime)."""
        entry = self._entries.get(handle)
        return entry.meta if entry is not None else None

    def running_in_chat(self, agent: str, gateway: str, chat_id: str) -> int:
        """How many of ``agent``'s jobs started from the chat still run (its quota)."""
        return sum(
            1
            for e in self._entries.values()
            if not e.meta.status.terminal
            and e.meta.agent == agent
            and (e.meta.gateway, e.meta.chat_id) == (gateway, chat_id)
        )

    def listing(self, reach: Reach) -> list[ProcessMeta]:
        """The jobs the caller reaches, oldest first."""
        metas = [e.meta for e in self._entries.values() if reach(e.meta)]
        return sorted(metas, key=lambda m: m.spawned_at)

    def read_log(self, handle: str, reach: Reach, offset: int, limit: int) -> str:
        """Lines ``offset`` … ``offset + limit - 1`` of the job's log (0-based)."""
        try:
            return read_lines(self.owned(handle, reach).meta.log_path, offset, limit)
        except OSError as exc:  # its text names the log's path: the reason only
            raise ProcessError(f"io error: {exc.strerror or type(exc).__name__}") from exc

    def _set(self, meta: ProcessMeta) -> None:
        """Record ``meta`` (on disk first, then in memory)."""
        try:
            write_meta(self.directory, meta)
        except (OSError, ValueError):  # ValueError: it would not read back (never written)
            log.exception("background process %s: its state could not be written", meta.handle)
        entry = self._entries.get(meta.handle)
        if entry is not None:
            entry.meta = meta

    def cleanup(self) -> list[str]:
        """Forget ended, reported jobs older than ``cleanup_after``; their handles."""
        current = now()
        gone = [
            handle
            for handle, entry in self._entries.items()
            if entry.meta.status.terminal
            and entry.meta.notified
            and entry.meta.completed_at is not None
            and (current - entry.meta.completed_at).total_seconds() > self.cleanup_after
        ]
        for handle in gone:
            meta = self._entries.pop(handle).meta
            for path in (meta.log_path, meta_path(self.directory, handle)):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
        return gone
