"""The operating-system calls the store makes, behind one small interface.

Everything durable goes through ``FileOps`` so tests can inject the failures real disks
produce (ENOSPC mid-write, EIO on fsync) at the true OS boundary, without patching modules.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Protocol

__all__ = ["OS_FILE_OPS", "FileOps", "OsFileOps", "fsync_dir"]


class FileOps(Protocol):
    """The file calls the store needs."""

    sync_appends: bool
    """True when ``open_append(path, sync=True)`` gives a descriptor on which every completed
    write is already durable (``O_DSYNC``), so no fsync follows it."""

    def open_append(self, path: Path, *, sync: bool = False) -> int:
        """Open (create) ``path`` for appending; return a descriptor."""
        ...

    def write(self, fd: int, data: bytes) -> int:
        """Write some of ``data``; return how many bytes were written."""
        ...

    def fsync(self, fd: int) -> None:
        """Flush the file's data and metadata to the disk."""
        ...

    def truncate(self, fd: int, size: int) -> None:
        """Cut the file back to ``size`` bytes."""
        ...

    def size(self, fd: int) -> int:
        """Current size of the open file."""
        ...

    def close(self, fd: int) -> None:
        """Close the descriptor."""
        ...

    def read_bytes(self, path: Path) -> bytes:
        """The whole content of ``path``.

        Recovery reads go through here too, so a test can make a file unreadable even when it
        runs as root, where ``chmod 000`` blocks nothing.
        """
        ...


_O_DSYNC = getattr(os, "O_DSYNC", 0)


class OsFileOps:
    """``FileOps`` on the real operating system.

    Durable appends use ``O_DSYNC``: the write returns once the data (and the file size) are
    on disk, the guarantee ``write`` + ``fdatasync`` gives, in one system call instead of
    two. On a server with many sessions every call is another wait for the GIL, so this is
    measurable (see specs/durable-sessions.md). Without ``O_DSYNC`` the log fsyncs.
    """

    sync_appends = bool(_O_DSYNC)

    def open_append(self, path: Path, *, sync: bool = False) -> int:
        """``open(O_WRONLY|O_APPEND|O_CREAT)``, plus ``O_DSYNC`` when ``sync``."""
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        return os.open(path, flags | (_O_DSYNC if sync else 0), 0o644)

    def write(self, fd: int, data: bytes) -> int:
        """``os.write``."""
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        """``os.fsync``."""
        os.fsync(fd)

    def truncate(self, fd: int, size: int) -> None:
        """``os.ftruncate``."""
        os.ftruncate(fd, size)

    def size(self, fd: int) -> int:
        """``os.fstat(fd).st_size``."""
        return os.fstat(fd).st_size

    def close(self, fd: int) -> None:
        """``os.close``."""
        os.close(fd)

    def read_bytes(self, path: Path) -> bytes:
        """``Path.read_bytes``."""
        return path.read_bytes()


OS_FILE_OPS: FileOps = OsFileOps()


def write_text_atomically(path: Path, text: str, *, new_file_mode: int = 0o644) -> None:
    """Replace ``path`` with ``text`` all or nothing: temporary file, fsync, rename, fsync dir.

    For files a person also reads or edits (policy, memory): a crash leaves the old or the new
    version, never half of one. An existing file keeps its permissions; a new one gets
    ``new_file_mode``. The parent folder is created if missing.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else new_file_mode
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    """Make a rename or a new file in ``path`` durable (fsync of the directory)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
