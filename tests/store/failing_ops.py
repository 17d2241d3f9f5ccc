"""A FileOps that fails like a full or broken disk, at the OS boundary, on demand.

The suite runs as root in CI, where ``chmod 000`` blocks nothing and a real full disk cannot be
made without privileges the test should not need: the failures are injected here instead, with
the errno a real system call would give.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from duragent.store.fileops import OS_FILE_OPS


class FailingFileOps:
    """Real file operations, except while told to fail.

    - ``failing``: writes stop part-way with ``write_errno`` (ENOSPC by default): ``partial``
      bytes of the failing write are really written first (a torn write), so the store's
      roll-back is exercised;
    - ``fail_fsync``: fsync fails with EIO;
    - ``only``: when set, ``failing`` and ``fail_fsync`` apply only to files whose name
      contains it (``"archive"``, ``"state.yaml"``, ``".tmp"`` for the temporary file of any
      atomic write), so one write path can fail while the others work;
    - ``fail_replace``: the rename of an atomic write fails with EIO;
    - ``fail_dir_fsync``: the fsync of a directory fails with EIO;
    - ``unreadable``: file name → errno for reading (and opening) files of that name, e.g.
      ``{"state.yaml": errno.EACCES}`` (what ``chmod 000`` does to a non-root reader);
    - ``open_errno``: opening any file for appending fails (EMFILE: out of descriptors).
    """

    def __init__(self, partial: int = 7) -> None:
        self.failing = False
        self.write_errno = errno.ENOSPC
        self.fail_fsync = False
        self.only: str | None = None
        self.fail_replace = False
        self.fail_dir_fsync = False
        self.partial = partial
        self.failures = 0
        self.unreadable: dict[str, int] = {}
        self.open_errno: int | None = None
        self._names: dict[int, str] = {}

    sync_appends = False  # every append is followed by the fsync this double controls

    def _refuse(self, code: int, path: Path | None = None) -> OSError:
        self.failures += 1
        return OSError(code, os.strerror(code), *([str(path)] if path is not None else []))

    def _targeted(self, fd: int) -> bool:
        return self.only is None or self.only in self._names.get(fd, "")

    def open_append(self, path: Path, *, sync: bool = False) -> int:
        if self.open_errno is not None:
            raise self._refuse(self.open_errno, path)
        if path.name in self.unreadable:
            raise self._refuse(self.unreadable[path.name], path)
        fd = OS_FILE_OPS.open_append(path)
        self._names[fd] = path.name
        return fd

    def open_new(self, path: Path, mode: int | None = None) -> int:
        fd = OS_FILE_OPS.open_new(path, mode)
        self._names[fd] = path.name
        return fd

    def write(self, fd: int, data: bytes) -> int:
        if self.failing and self._targeted(fd):
            if self.partial:
                OS_FILE_OPS.write(fd, data[: self.partial])
            raise self._refuse(self.write_errno)
        return OS_FILE_OPS.write(fd, data)

    def fsync(self, fd: int) -> None:
        if self.fail_fsync and self._targeted(fd):
            raise self._refuse(errno.EIO)
        OS_FILE_OPS.fsync(fd)

    def replace(self, source: Path, target: Path) -> None:
        if self.fail_replace:
            raise self._refuse(errno.EIO, source)
        OS_FILE_OPS.replace(source, target)

    def fsync_dir(self, path: Path) -> None:
        if self.fail_dir_fsync:
            raise self._refuse(errno.EIO, path)
        OS_FILE_OPS.fsync_dir(path)

    def truncate(self, fd: int, size: int) -> None:
        OS_FILE_OPS.truncate(fd, size)

    def size(self, fd: int) -> int:
        return OS_FILE_OPS.size(fd)

    def close(self, fd: int) -> None:
        self._names.pop(fd, None)
        OS_FILE_OPS.close(fd)

    def read_bytes(self, path: Path) -> bytes:
        if path.name in self.unreadable:
            raise self._refuse(self.unreadable[path.name], path)
        return OS_FILE_OPS.read_bytes(path)
