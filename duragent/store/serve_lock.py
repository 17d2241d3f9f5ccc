"""One server per workspace: an exclusive ``flock`` held for the server's whole life.

Two processes appending to the same ``events.jsonl`` each track their own size and next seq,
so they hand out duplicate seqs and cut back each other's lines: acknowledged messages are
lost. Nothing but the server writes the sessions directory (every CLI command goes through
the HTTP API), so one lock held by ``serve`` protects it.

- The lock is ``.duragent/serve.lock`` (``flock(LOCK_EX | LOCK_NB)``). ``flock`` belongs to the
  file's inode, so two ``-c`` paths, symlinks or relative spellings of the same workspace all
  meet on the same lock. A sessions directory configured outside the workspace directory
  (``services.session.path``) gets its own ``.serve.lock`` too, so two workspaces sharing one
  sessions directory cannot both serve it.
- The kernel drops the lock when the process dies, however it dies (SIGKILL included): a stale
  file never blocks a restart. The descriptor is close-on-exec, so a tool's child process
  that outlives the server does not keep the workspace locked.
- The file holds the holder's PID, start time and, once bound, its HTTP address (JSON), so a
  second ``serve`` fails at once naming them, and ``chat`` finds the running server instead of
  guessing from the configured port.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path

from duragent.core.events import now_rfc3339
from duragent.errors import DuragentError

__all__ = [
    "LOCK_FILENAME",
    "SESSIONS_LOCK_FILENAME",
    "Holder",
    "ServeLock",
    "WorkspaceBusyError",
    "lock_files",
    "read_holder",
]

LOCK_FILENAME = "serve.lock"
SESSIONS_LOCK_FILENAME = ".serve.lock"


class WorkspaceBusyError(DuragentError):
    """Another process already serves this workspace."""

    def __init__(self, path: Path, holder: Holder | None) -> None:
        self.path = path
        self.holder = holder
        if holder is None or holder.pid is None:
            who = "another process (it is starting)"
        else:
            at = f" at {holder.address}" if holder.address else " (still starting)"
            since = f" since {holder.started}" if holder.started else ""
            who = f"PID {holder.pid}{at}{since}"
        super().__init__(
            f"workspace {path} is already served by {who}; stop that server first "
            "(`duragent chat`, `attach` and `session` commands use it as it is)"
        )


@dataclass(frozen=True, slots=True)
class Holder:
    """What the lock file says about the server holding it."""

    pid: int | None
    address: str | None
    started: str | None
    workspace: str | None


def lock_files(workspace_dir: Path, sessions_dir: Path) -> list[Path]:
    """The lock files guarding a workspace: its own, plus the sessions directory's if apart."""
    files = [workspace_dir / LOCK_FILENAME]
    ws_real, sessions_real = workspace_dir.resolve(), sessions_dir.resolve()
    if not sessions_real.is_relative_to(ws_real):
        files.append(sessions_dir / SESSIONS_LOCK_FILENAME)
    return files


def _parse(raw: bytes) -> Holder:
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return Holder(None, None, None, None)  # written in a moment (or by an old version)
    pid = data.get("pid")
    address, started, workspace = data.get("address"), data.get("started"), data.get("workspace")
    return Holder(
        pid=pid if isinstance(pid, int) else None,
        address=address if isinstance(address, str) else None,
        started=started if isinstance(started, str) else None,
        workspace=workspace if isinstance(workspace, str) else None,
    )


def read_holder(path: Path) -> Holder | None:
    """The holder of the lock at ``path``, or None when no live process holds it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _parse(os.pread(fd, 65536, 0))
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


class ServeLock:
    """The held locks of one running server (see module docstring)."""

    def __init__(self, workspace: Path, fds: list[int], started: str) -> None:
        self.workspace = workspace
        self._fds = fds
        self._started = started

    @classmethod
    def acquire(cls, workspace_dir: Path, sessions_dir: Path) -> ServeLock:
        """Lock the workspace now, or raise ``WorkspaceBusyError`` naming the holder."""
        workspace_dir.mkdir(parents=True, exist_ok=True)
        fds: list[int] = []
        try:
            for path in lock_files(workspace_dir, sessions_dir):
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    holder = _parse(os.pread(fd, 65536, 0))
                    os.close(fd)
                    raise WorkspaceBusyError(path.parent.resolve(), holder) from None
                except BaseException:
                    os.close(fd)
                    raise
                fds.append(fd)
        except BaseException:
            for fd in fds:
                os.close(fd)  # closing drops the lock
            raise
        lock = cls(workspace_dir.resolve(), fds, now_rfc3339())
        lock.publish(None)
        return lock

    def publish(self, address: str | None) -> None:
        """Record who holds the lock (and its HTTP address once bound) for other processes."""
        body = json.dumps(
            {
                "pid": os.getpid(),
                "address": address,
                "started": self._started,
                "workspace": str(self.workspace),
            }
        ).encode()
        for fd in self._fds:
            os.ftruncate(fd, 0)
            os.pwrite(fd, body + b"\n", 0)

    def release(self) -> None:
        """Drop the locks (a clean stop; the kernel does the same for a dead process)."""
        fds, self._fds = self._fds, []
        for fd in fds:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)  # no stale address for readers that do not lock
            os.close(fd)

    @property
    def held(self) -> bool:
        """Whether this object still holds its locks."""
        return bool(self._fds)
