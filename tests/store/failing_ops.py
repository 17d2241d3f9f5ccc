"""A FileOps that fails like a full or broken disk, at the OS boundary, on demand."""

from __future__ import annotations

import errno
from pathlib import Path

from duragent.store.fileops import OS_FILE_OPS


class FailingFileOps:
    """Real file operations, except while ``failing``: writes stop part-way with ENOSPC.

    ``partial`` bytes of the failing write are really written first (a torn write), so the
    store's roll-back is exercised; ``fail_fsync`` makes fsync fail with EIO instead.
    """

    def __init__(self, partial: int = 7) -> None:
        self.failing = False
        self.fail_fsync = False
        self.partial = partial
        self.failures = 0

    sync_appends = False  # every append is followed by the fsync this double controls

    def open_append(self, path: Path, *, sync: bool = False) -> int:
        return OS_FILE_OPS.open_append(path)

    def write(self, fd: int, data: bytes) -> int:
        if self.failing:
            self.failures += 1
            if self.partial:
                OS_FILE_OPS.write(fd, data[: self.partial])
            raise OSError(errno.ENOSPC, "No space left on device")
        return OS_FILE_OPS.write(fd, data)

    def fsync(self, fd: int) -> None:
        if self.fail_fsync:
            self.failures += 1
            raise OSError(errno.EIO, "Input/output error")
        OS_FILE_OPS.fsync(fd)

    def truncate(self, fd: int, size: int) -> None:
        OS_FILE_OPS.truncate(fd, size)

    def size(self, fd: int) -> int:
        return OS_FILE_OPS.size(fd)

    def close(self, fd: int) -> None:
        OS_FILE_OPS.close(fd)
