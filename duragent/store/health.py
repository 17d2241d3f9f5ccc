"""Whether the sessions directory can be written right now, and OS errors as ``StorageError``.

"Ready" for storage means: the most recent write attempt succeeded. Every session write
reports its outcome here (a boolean store, no lock: the last writer wins, which is the
meaning wanted). While the last write failed, ``check`` probes the disk with a tiny write
(at most once a second), so readiness comes back by itself once space is freed, even if no
session writes in the meantime. While healthy, ``check`` costs nothing: a healthy disk is not
fsync'd on every readiness poll.
"""

from __future__ import annotations

import errno
import logging
import threading
import time
from pathlib import Path

from duragent.errors import StorageError
from duragent.store.fileops import FileOps

__all__ = [
    "PROBE_FILENAME",
    "StoreHealth",
    "is_database_unreachable",
    "is_disk_full",
    "storage_error",
]

log = logging.getLogger(__name__)

PROBE_FILENAME = ".write-probe"

_NOT_THE_MACHINE = {errno.EISDIR, errno.ENOTDIR, errno.ELOOP}
"""OS errors that say the *files* are wrong (a directory where a file belongs), not the disk."""

_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


def is_disk_full(exc: OSError) -> bool:
    """True for ENOSPC / EDQUOT: no space or quota left (HTTP 507, not 503)."""
    return exc.errno in _FULL


def is_database_unreachable(exc: OSError) -> bool:
    """True when a database store could not be reached (``store.postgres.connection``).

    Only the database backend raises a ``StorageError`` caused by a ``ConnectionError`` (file
    calls do not connect anywhere): front ends then say the server reconnects by itself.
    """
    return isinstance(exc, StorageError) and isinstance(exc.cause, ConnectionError)


def storage_error(operation: str, exc: OSError) -> OSError:
    """``exc`` as a ``StorageError`` about ``operation``, unless it says the files are wrong.

    Permission, descriptors, I/O, space, read-only: conditions of the machine that a person
    fixes, after which the same operation succeeds. Already a ``StorageError``: unchanged.
    """
    if isinstance(exc, StorageError) or exc.errno in _NOT_THE_MACHINE or exc.errno is None:
        return exc
    return StorageError(operation, exc)


class StoreHealth:
    """The outcome of the last write to the store (see module docstring)."""

    def __init__(self, root: Path, ops: FileOps) -> None:
        self._root = root
        self._ops = ops
        self._failure: OSError | None = None
        self._probed_at = 0.0
        self._probe_lock = threading.Lock()

    @property
    def failure(self) -> OSError | None:
        """The error of the last write, when it failed; None when it succeeded."""
        return self._failure

    def succeeded(self) -> None:
        """A write went through: the store is writable."""
        if self._failure is not None:
            log.warning("session store writable again after: %s", self._failure)
            self._failure = None

    def failed(self, exc: OSError) -> None:
        """A write failed with ``exc``."""
        if self._failure is None:
            log.error("session store cannot write: %s", exc)
        self._failure = exc

    def check(self, *, min_interval: float = 1.0) -> OSError | None:
        """The current failure, after probing the disk again if one is recorded (blocking)."""
        if self._failure is None:
            return None
        now = time.monotonic()
        if now - self._probed_at < min_interval or not self._probe_lock.acquire(blocking=False):
            return self._failure
        try:
            self._probed_at = now
            self._probe()
        finally:
            self._probe_lock.release()
        return self._failure

    def _probe(self) -> None:
        path = self._root / PROBE_FILENAME
        try:
            fd = self._ops.open_append(path)
            try:
                self._ops.write(fd, b"probe\n")
                self._ops.fsync(fd)
            finally:
                self._ops.close(fd)
                path.unlink(missing_ok=True)
        except OSError as exc:
            self.failed(storage_error(f"probing {self._root} for writes", exc))
            return
        self.succeeded()
