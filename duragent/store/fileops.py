"""The operating-system calls the store makes, behind one small interface.

Everything durable goes through ``FileOps`` so tests can inject the failures real disks
produce (ENOSPC mid-write, EIO on fsync, a refused rename) at the true OS boundary, without
patching modules: appends, atomic replacements (``atomic.atomic_write``), directory fsyncs
and the reads recovery depends on. Removing a temporary file after a failure is not a write
of data and stays outside.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

__all__ = ["OS_FILE_OPS", "FileOps", "OsFileOps", "write_all"]


class FileOps(Protocol):
    """The file calls the store needs."""

    sync_appends: bool
    """True when ``open_append(path, sync=True)`` gives a descriptor on which every completed
    write is already durable (``O_DSYNC``), so no fsync follows it."""

    def open_append(self, path: Path, *, sync: bool = False) -> int:
        """Open (create) ``path`` for appending; return a descriptor."""
        ...

    def open_new(self, path: Path, mode: int | None = None) -> int:
        """Create ``path``, which must not exist, for writing; return a descriptor.

        With ``mode`` the file gets exactly that permission (the umask does not apply: an
        atomic replacement keeps the mode of the file it replaces); without, ``0o666`` less
        the umask, as ``open()`` gives.
        """
        ...

    def replace(self, source: Path, target: Path) -> None:
        """Rename ``source`` over ``target`` atomically (``os.replace``)."""
        ...

    def fsync_dir(self, path: Path) -> None:
        """Make a rename or a new file in the folder ``path`` durable."""
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

    def open_new(self, path: Path, mode: int | None = None) -> int:
        """``open(O_WRONLY|O_CREAT|O_EXCL)``; ``fchmod`` to ``mode`` when given."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        fd = os.open(path, flags, 0o666 if mode is None else mode)
        if mode is not None:
            try:
                os.fchmod(fd, mode)
            except BaseException:
                os.close(fd)
                raise
        return fd

    def replace(self, source: Path, target: Path) -> None:
        """``os.replace``."""
        os.replace(source, target)

    def fsync_dir(self, path: Path) -> None:
        """``os.fsync`` of the directory ``path``."""
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

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


def write_all(ops: FileOps, fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` through ``ops`` (a write may take only part)."""
    offset = 0
    while offset < len(data):
        written = ops.write(fd, data[offset:] if offset else data)
        if written <= 0:
            raise OSError("write made no progress")
        offset += written
