"""The bytes of a session's attachments, content-addressed: the file and in-memory backends.

```
sessions/<session_id>/attachments/<sha256>              the bytes, named by their SHA-256
sessions/<session_id>/attachments/<sha256>.<ULID>.tmp   a put not finished (or cut by a crash)
```

A blob is written as every durable file is (``atomic.atomic_write``: temporary file, fsync,
rename, fsync of the folder), so its final name holds the whole content or does not exist;
a crash leaves at most a ``.tmp`` file, which no method here ever reads or lists. Being in
the session's folder, blobs go with it: deleted with it, moved by quarantine and restore,
and never touched by the event log's rollover (which rewrites only the ``events`` files).

Blobs are put by whoever downloads them (a front end, before the message that carries them
is recorded), not only by the session's actor, so a put may run while the actor loads the
session and clears what crashes left (``remove_stale_temp_files``). A temporary file is
taken as a crash's only when it was last written before this process started (a crash
ends a process: the restart clears its leftovers at once) or is untouched for
``STALE_TEMP_SECONDS`` (another process's); never one a put is writing now. A put that
fails removes its own temporary file (``atomic_write``).

The PostgreSQL backend is ``postgres.attachment_rows``; all pass
``tests/store/test_attachment_storage_contract.py``.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from pathlib import Path

from duragent.core.attachments import content_hash, is_content_hash
from duragent.errors import NotFoundError
from duragent.store.atomic import atomic_write
from duragent.store.fileops import OS_FILE_OPS, FileOps
from duragent.store.health import storage_error

__all__ = [
    "ATTACHMENTS_DIRNAME",
    "STALE_TEMP_SECONDS",
    "AttachmentFiles",
    "AttachmentNotFoundError",
    "MemoryAttachments",
    "checked_hash",
    "export_bytes",
]

log = logging.getLogger(__name__)

ATTACHMENTS_DIRNAME = "attachments"
STALE_TEMP_SECONDS = 3600.0
"""A blob's temporary file untouched this long is a crash's leftover, whoever wrote it."""
PROCESS_STARTED = time.time()
"""About when this process started (this module is imported before any put): a temporary
file last written before it was left by a process that is gone."""


class AttachmentNotFoundError(NotFoundError):
    """No attachment with this hash in this session (never stored, or its session is gone)."""

    def __init__(self, sha256: str, session: str) -> None:
        self.sha256 = sha256
        self.session = session
        super().__init__(f"no attachment {sha256} in session {session}")


def checked_hash(sha256: str) -> str:
    """``sha256`` when it is a content hash; ``ValueError`` otherwise (never a path)."""
    if not isinstance(sha256, str) or not is_content_hash(sha256):
        raise ValueError(f"not an attachment hash (64 lowercase hex digits): {sha256!r}")
    return sha256


def export_bytes(data: bytes, dest: Path, ops: FileOps = OS_FILE_OPS) -> None:
    """Write ``data`` to ``dest`` all or nothing (a reader never sees half a copy).

    Not fsync'd: the copy is made again from the stored blob whenever it is missing or
    empty (``atomic_write``'s ``durable=False``), so a photo is not written durably twice.
    """
    atomic_write(dest, data, ops, durable=False)


class AttachmentFiles:
    """One session's blobs on disk (module docstring): ``protocols.AttachmentStorage``."""

    def __init__(
        self,
        session_dir: Path,
        ops: FileOps = OS_FILE_OPS,
        *,
        clock: Callable[[], float] = time.time,
        started: float | None = None,
    ) -> None:
        self.folder = session_dir / ATTACHMENTS_DIRNAME
        self._ops = ops
        self._clock = clock
        """The wall clock, as file modification times are."""
        self._started = PROCESS_STARTED if started is None else started
        """When this process started (a test's restart passes its own)."""

    def _path(self, sha256: str) -> Path:
        return self.folder / checked_hash(sha256)

    def put(self, data: bytes) -> str:
        """Keep ``data`` durably under its hash; the same bytes again write nothing."""
        sha = content_hash(data)
        path = self.folder / sha
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_size == len(data):  # written whole once (renamed after fsync)
                return sha
        self._make_folder()
        atomic_write(path, data, self._ops)
        return sha

    def _make_folder(self) -> None:
        """Create ``attachments/`` durably, inside the session's folder only (never made)."""
        if self.folder.is_dir():
            return
        session_dir = self.folder.parent
        if not session_dir.is_dir():
            raise FileNotFoundError(
                f"session folder {session_dir} does not exist (deleted or quarantined?): "
                "attachments are stored only in a live session"
            )
        try:
            self.folder.mkdir(exist_ok=True)
            self._ops.fsync_dir(session_dir)
        except OSError as exc:
            raise storage_error(f"creating {self.folder}", exc) from exc

    def has(self, sha256: str) -> bool:
        """Whether the blob is stored."""
        return self._path(sha256).is_file()

    def read(self, sha256: str) -> bytes:
        """The blob's bytes (``AttachmentNotFoundError`` when it is not stored)."""
        path = self._path(sha256)
        try:
            return self._ops.read_bytes(path)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise AttachmentNotFoundError(sha256, str(self.folder.parent)) from None
        except OSError as exc:
            raise storage_error(f"reading {path}", exc) from exc

    def size(self, sha256: str) -> int:
        """The blob's length in bytes."""
        path = self._path(sha256)
        try:
            return path.stat().st_size
        except (FileNotFoundError, NotADirectoryError):
            raise AttachmentNotFoundError(sha256, str(self.folder.parent)) from None
        except OSError as exc:
            raise storage_error(f"reading the size of {path}", exc) from exc

    def hashes(self) -> list[str]:
        """Every stored blob's hash, sorted (temporary files are not blobs)."""
        try:
            names = [p.name for p in self.folder.iterdir()]
        except (FileNotFoundError, NotADirectoryError):
            return []
        return sorted(n for n in names if is_content_hash(n))

    def export(self, sha256: str, dest: Path) -> None:
        """A copy of the blob at ``dest``, replaced atomically (never the blob itself)."""
        export_bytes(self.read(sha256), dest, self._ops)

    def remove_stale_temp_files(self) -> int:
        """Remove the temporary files crashes left (module docstring); how many."""
        try:
            temps = list(self.folder.glob("*.tmp"))
        except OSError:
            return 0
        removed = 0
        cutoff = max(self._started, self._clock() - STALE_TEMP_SECONDS)
        for stale in temps:
            try:
                if stale.stat().st_mtime >= cutoff:
                    continue  # a put may be writing it now (this process, or another)
                stale.unlink()
            except FileNotFoundError:
                continue  # renamed by its put, or removed by another sweep
            except OSError as exc:
                log.warning("could not remove %s: %s", stale, exc)
                continue
            removed += 1
        return removed


class MemoryAttachments:
    """The in-memory backend's blobs: a dict of the live session, found on every call.

    ``blobs`` returns the live session's dict, or None once the session is gone (deleted or
    quarantined), as a folder that moved away.
    """

    def __init__(self, blobs: Callable[[], dict[str, bytes] | None], session_id: str) -> None:
        self._blobs = blobs
        self.session_id = session_id

    def _found(self, sha256: str) -> bytes:
        checked_hash(sha256)
        blobs = self._blobs()
        data = None if blobs is None else blobs.get(sha256)
        if data is None:
            raise AttachmentNotFoundError(sha256, self.session_id)
        return data

    def put(self, data: bytes) -> str:
        """Keep a copy of ``data`` under its hash; the same bytes again write nothing."""
        sha = content_hash(data)
        blobs = self._blobs()
        if blobs is None:
            raise FileNotFoundError(f"session {self.session_id} is not live: nothing stored")
        blobs.setdefault(sha, bytes(data))  # one dict operation: atomic between threads
        return sha

    def has(self, sha256: str) -> bool:
        """Whether the blob is stored."""
        checked_hash(sha256)
        blobs = self._blobs()
        return blobs is not None and sha256 in blobs

    def read(self, sha256: str) -> bytes:
        """The blob's bytes."""
        return self._found(sha256)

    def size(self, sha256: str) -> int:
        """The blob's length in bytes."""
        return len(self._found(sha256))

    def hashes(self) -> list[str]:
        """Every stored blob's hash, sorted."""
        return sorted(self._blobs() or ())

    def export(self, sha256: str, dest: Path) -> None:
        """A copy of the blob at ``dest``, replaced atomically."""
        export_bytes(self._found(sha256), dest)
