"""The server's background jobs: spawned, watched, reported to their session, recovered.

One registry per server (a service of ``duragent serve``), over ``.duragent/processes/``.
Each job is a ``<handle>.log`` and a ``<handle>.meta.json`` (``meta``) and, while it runs,
a monitor task (``jobs``). Every state change is written to the meta file before anything
else hears of it.

**Outcomes reach the session that spawned the job.** When a job ends (or a ``watch`` sees
its output fall silent) the registry calls its ``ProcessEvents`` port with the message the
reference writes (``[Background Process Completed]`` …); the runtime's implementation adds
it to the session and runs a turn there (steered into a running one), delivering the reply
through the session's front end. Tools never run turns themselves: they sit below the turn
runner. A job's ``notified`` flag is set only once that port returned, so an outcome a crash
interrupted is reported again at the next start (the session de-duplicates it by id).

**Restart** (``start``): a tmux job still running is re-attached (its session survived the
server); a tmux job that ended meanwhile gets its exit status from its log's marker; a plain
job was killed with the server (by the reaper) and is marked ``lost``. Every ended job not
yet reported is reported then, so no job is ever an orphan nothing tracks. A graceful stop
kills plain jobs and leaves them for the next start to report the same way.

**A bad file is never fatal** (issue 34): one that cannot be used (``meta.recover_all``), or
whose recovery raises, is moved to ``processes/_quarantine/`` with its reason and listed by
``skipped`` (``/readyz``'s ``skipped_records``); every other job is recovered and listed.

The jobs are kept in a ``job_table.JobTable`` (on disk first, each caller seeing only its
own, ended ones forgotten 30 min after they ended, once reported); this module runs them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any

from duragent.core.ids import new_ulid
from duragent.tools._process import kill_group
from duragent.tools.processes.job_table import CLEANUP_AFTER_SECONDS, JobTable, TrackedJob
from duragent.tools.processes.jobs import (
    KILL_GRACE_SECONDS,
    ProcessError,
    SpawnRequest,
    start_local,
    tmux_outcome,
    watch_tmux,
)
from duragent.tools.processes.meta import (
    ProcessMeta,
    ProcessStatus,
    Reach,
    meta_path,
    now,
    pid_start_time,
    recover_all,
    set_aside_meta,
    write_meta,
)
from duragent.tools.processes.reports import (
    Dedupe,
    ProcessEvents,
    completion_message,
    halted_message,
    watch_silence,
)
from duragent.tools.processes.tmux import Tmux

__all__ = [
    "CLEANUP_AFTER_SECONDS",
    "ProcessError",
    "ProcessEvents",
    "ProcessRegistry",
    "SpawnRequest",
    "completion_message",
]

log = logging.getLogger(__name__)


class ProcessRegistry(JobTable):
    """Every background job of the workspace (see module docstring)."""

    def __init__(
        self,
        directory: Path,
        *,
        events: ProcessEvents | None = None,
        tmux: Tmux | None = None,
        poll_seconds: float = 2.0,
        cleanup_after: float = CLEANUP_AFTER_SECONDS,
        cleanup_every: float = 300.0,
        kill_grace: float = KILL_GRACE_SECONDS,
    ) -> None:
        super().__init__(directory, cleanup_after=cleanup_after)
        self.events = events
        self.tmux = tmux or Tmux()
        self.poll_seconds = poll_seconds
        self.cleanup_every = cleanup_every
        self.kill_grace = kill_grace
        self._tasks: set[asyncio.Task[Any]] = set()
        self._dedupe = Dedupe()
        self._reporting: set[str] = set()
        self._skipped: list[dict[str, str]] = []

    # --- service ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Re-attach or report every job on disk, then start the periodic cleanup."""
        self.directory.mkdir(parents=True, exist_ok=True)
        metas, self._skipped = await asyncio.to_thread(recover_all, self.directory)
        for meta in metas:
            try:
                await self._recover(meta)
            except Exception as exc:  # whatever one record makes recovery raise: that one only
                self._entries.pop(meta.handle, None)
                reason = f"could not be recovered: {type(exc).__name__}: {exc}"
                path = meta_path(self.directory, meta.handle)
                self._skipped.append(set_aside_meta(path, f"{path}: {reason}"))
        for entry in list(self._entries.values()):
            if entry.meta.status.terminal and not entry.meta.notified:
                self._spawn_task(self._report(entry.meta.handle))
        self._spawn_task(self._cleanup_loop())

    def skipped(self) -> list[dict[str, str]]:
        """Job files set aside at start (now or by an earlier start), each with its reason."""
        return list(self._skipped)

    async def stop(self) -> None:
        """Stop watching: plain jobs are killed (the next start reports them), tmux ones live."""
        for entry in self._entries.values():
            if entry.local is not None and not entry.meta.status.terminal:
                entry.local.kill()
                self._set(replace(entry.meta.ended(ProcessStatus("lost")), notified=False))
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for entry in self._entries.values():  # a monitor cancelled before it first ran
            if entry.local is not None:
                await entry.local.close()

    async def _recover(self, meta: ProcessMeta) -> None:
        if not meta.status.terminal:
            if meta.tmux_session is not None and await self.tmux.has_session(meta.tmux_session):
                entry = self._entries[meta.handle] = TrackedJob(meta)
                self._monitor(entry)
                log.info("background process %s re-attached (tmux)", meta.handle)
                return
            if meta.tmux_session is not None:  # it ended while no server watched
                meta = replace(meta.ended(tmux_outcome(meta.log_path)), notified=False)
            else:
                self._kill_leftover(meta)
                meta = replace(meta.ended(ProcessStatus("lost")), notified=False)
            self._set(meta)
            log.info("background process %s ended while the server was down", meta.handle)
        self._entries[meta.handle] = TrackedJob(meta)

    @staticmethod
    def _kill_leftover(meta: ProcessMeta) -> None:
        """A plain job's group if it still runs (the reaper could not start): never untracked."""
        started = meta.pid_start
        if meta.pid is not None and started is not None and pid_start_time(meta.pid) == started:
            log.warning("background process %s outlived its server: killed", meta.handle)
            kill_group(meta.pid)

    # --- spawning ----------------------------------------------------------------------------

    async def spawn(self, request: SpawnRequest) -> ProcessMeta:
        """Start a job; its meta (``running``) is on disk before its command runs.

        Raises ProcessError ("spawn failed: …") when it cannot start.
        """
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ProcessError(f"spawn failed: cannot create {self.directory}: {exc}") from exc
        handle = new_ulid().lower()
        tmux = request.interactive and self.tmux.available
        meta = ProcessMeta(
            handle=handle,
            command=request.command,
            session_id=request.session_id,
            agent=request.agent,
            log_path=(self.directory / f"{handle}.log").resolve(),
            spawned_at=now(),
            timeout_seconds=request.timeout_seconds,
            label=request.label,
            workdir=str(request.cwd),
            tmux_session=f"duragent-{handle}" if tmux else None,
            backend="tmux" if tmux else "local",
            gateway=request.gateway,
            chat_id=request.chat_id,
        )
        try:  # on disk before it runs: a job nothing records is never started
            write_meta(self.directory, meta)
        except (OSError, ValueError) as exc:
            raise ProcessError(f"spawn failed: cannot record the job: {exc}") from exc
        entry = self._entries[handle] = TrackedJob(meta)
        # Recorded, so it must end up watched: a cancellation (the tool call's time limit)
        # waits for the start to finish and the watch to begin, then goes through. Before,
        # one landing while the process started left a job no one watched or reported.
        starting = asyncio.ensure_future(self._start(entry, request))
        try:
            await asyncio.shield(starting)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await starting
            raise
        return entry.meta

    async def _start(self, entry: TrackedJob, request: SpawnRequest) -> None:
        """Start the recorded job's command and watch it (ProcessError if it cannot start)."""
        meta = entry.meta
        try:
            if meta.tmux_session is not None:
                meta.log_path.touch()
                await self.tmux.new_session(
                    meta.tmux_session,
                    request.command,
                    meta.log_path,
                    cwd=request.cwd,
                    env=request.env,
                )
            else:
                entry.local = await start_local(
                    request.command,
                    cwd=request.cwd,
                    log_path=meta.log_path,
                    env=request.env,
                    confine=request.confine,
                )
                pid = entry.local.pgid
                self._set(replace(meta, pid=pid, pid_start=pid_start_time(pid)))
        except (OSError, ValueError) as exc:
            self._set(replace(meta.ended(ProcessStatus("failed", -1)), notified=True))
            raise ProcessError(f"spawn failed: {exc}") from exc
        self._monitor(entry)

    def _monitor(self, entry: TrackedJob) -> None:
        entry.done = asyncio.get_running_loop().create_future()
        self._spawn_task(self._watch(entry))

    async def _watch(self, entry: TrackedJob) -> None:
        meta = entry.meta
        left = float(meta.timeout_seconds) - (now() - meta.spawned_at).total_seconds()
        timeout = max(left, 0.0) if meta.timeout_seconds > 0 else None  # None: no limit
        if entry.local is not None:
            status = await entry.local.run(timeout, self.kill_grace)
        else:
            assert meta.tmux_session is not None
            status = await watch_tmux(
                self.tmux,
                meta.tmux_session,
                meta.log_path,
                time_limit=timeout,
                poll=self.poll_seconds,
                killed=entry.killed,
            )
        if not entry.meta.status.terminal:  # ``kill`` may have recorded it already
            self._set(entry.meta.ended(status))
        if entry.watcher is not None:
            entry.watcher.cancel()
        assert entry.done is not None
        entry.done.set_result(entry.meta)
        if not entry.waited:
            await self._report(meta.handle)

    async def wait(self, handle: str) -> ProcessMeta:
        """Wait for a job to end; its outcome is this caller's (no callback turn).

        If the caller is cancelled (its tool call timed out) the job runs on and is
        reported to its session when it ends, as any job.
        """
        entry = self._entries[handle]
        assert entry.done is not None
        entry.waited = True
        try:
            meta = await asyncio.shield(entry.done)
        except asyncio.CancelledError:
            entry.waited = False
            if entry.done.done():  # it ended just now: report it, as nobody else will
                self._spawn_task(self._report(handle))
            raise
        self._set(replace(self._entries[handle].meta, notified=True))
        return meta

    # --- reports -----------------------------------------------------------------------------

    async def _report(self, handle: str) -> None:
        """Tell the job's session it ended; ``notified`` once told (else retried later)."""
        entry = self._entries.get(handle)
        if entry is None or entry.meta.notified or self.events is None:
            return
        if handle in self._reporting or not self._dedupe.fresh("ended", handle):
            return
        self._reporting.add(handle)
        try:
            await self.events.process_ended(entry.meta, completion_message(entry.meta))
        except Exception:
            log.exception("background process %s: its session was not told (retried)", handle)
            self._dedupe.forget("ended", handle)
            return
        finally:
            self._reporting.discard(handle)
        self._set(replace(self._entries[handle].meta, notified=True))

    async def _halted(self, handle: str) -> None:
        entry = self._entries.get(handle)
        if entry is None or self.events is None or not self._dedupe.fresh("halted", handle):
            return
        try:
            await self.events.screen_halted(entry.meta, halted_message(handle))
        except Exception:
            log.exception("background process %s: the halted screen was not reported", handle)

    # --- actions (all for jobs the caller reaches only) -------------------------------------

    async def kill(self, handle: str, reach: Reach) -> None:
        """Stop a job (recorded as ``killed`` at once; its session is told as for any end)."""
        entry = self.running(handle, reach)
        self._set(entry.meta.ended(ProcessStatus("killed")))
        entry.killed.set()
        if entry.local is not None:
            entry.local.kill()
        if entry.watcher is not None:
            entry.watcher.cancel()

    async def write(self, handle: str, reach: Reach, text: str) -> None:
        """Type ``text`` into a tmux job, or write it to a plain job's stdin."""
        entry = self.running(handle, reach)
        text = text.replace("\\n", "\n")  # a model's "\n" means a newline, as documented
        if entry.meta.tmux_session is not None:
            await self.tmux.send_literal(
                entry.meta.tmux_session, text.rstrip("\n"), enter=text.endswith("\n")
            )
            return
        if entry.local is None or entry.local.stdin is None:
            raise ProcessError("process does not have stdin")
        if not await entry.local.write(text.encode("utf-8")):
            raise ProcessError("stdin write timed out")

    def tmux_session(self, handle: str, reach: Reach, *, running: bool) -> str:
        """The job's tmux session (ProcessError for a plain job or without tmux)."""
        entry = self.running(handle, reach) if running else self.owned(handle, reach)
        if entry.meta.tmux_session is None:
            raise ProcessError("process does not have a tmux session")
        if not self.tmux.available:
            raise ProcessError("tmux is not available")
        return entry.meta.tmux_session

    def watch(self, handle: str, reach: Reach, silence: float) -> None:
        """Report once each time the job's output stays silent for ``silence`` seconds."""
        self.tmux_session(handle, reach, running=True)
        entry = self._entries[handle]
        if entry.watcher is not None:
            entry.watcher.cancel()
        entry.watcher = self._spawn_task(
            watch_silence(
                entry.meta.log_path,
                silence,
                self.poll_seconds,
                lambda: not entry.meta.status.terminal,
                lambda: self._halted(handle),
            )
        )

    def unwatch(self, handle: str, reach: Reach) -> None:
        """Stop the job's watcher (if any)."""
        entry = self.owned(handle, reach)
        if entry.watcher is not None:
            entry.watcher.cancel()
            entry.watcher = None

    # --- housekeeping ------------------------------------------------------------------------

    async def _cleanup_loop(self) -> None:
        """Every ``cleanup_every``: forget old jobs, report again those not yet reported."""
        while True:
            self.cleanup()
            for handle, entry in list(self._entries.items()):
                if entry.meta.status.terminal and not entry.meta.notified and not entry.waited:
                    self._spawn_task(self._report(handle))
            await asyncio.sleep(self.cleanup_every)

    def _spawn_task(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(_log_failure)
        return task


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background process task failed", exc_info=task.exception())
