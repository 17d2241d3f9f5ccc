"""The operating-system calls the store makes, behind one small interface.

Everything durable goes through ``FileOps`` so tests can inject the failures real disks
produce (ENOSPC mid-write, EIO on fsync) at the true OS boundary, without patching modules.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

__all__ = ["OS_FILE_OPS", "FileOps", "OsFileOps", "fsync_dir"]


class FileOps(Protocol):
    """The file calls the store needs."""

    def open_append(self, path: Path) -> int:
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


class OsFileOps:
    """``FileOps`` on the real operating system."""

    def open_append(self, path: Path) -> int:
        """``open(O_WRONLY|O_APPEND|O_CREAT)``."""
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)

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


OS_FILE_OPS: FileOps = OsFileOps()


def fsync_dir(path: Path) -> None:
    """Make a rename or a new file in ``path`` durable (fsync of the directory)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
