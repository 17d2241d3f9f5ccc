"""Real file operations with a slow fsync for chosen sessions (a disk that stalls)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from duragent.store.fileops import OS_FILE_OPS, OsFileOps


class SlowFsyncOps(OsFileOps):
    """Real file operations, but fsync of files under ``slow_dir`` takes ``delay`` seconds.

    With ``held`` set (a ``threading.Event``), such an fsync instead waits until it is set: a
    test that must see something happen *while* a disk stalls holds it as long as it needs,
    whatever the machine's speed, instead of hoping a fixed delay outlasts it.
    """

    def __init__(self, delay: float = 0.0, *, held: threading.Event | None = None) -> None:
        self.delay = delay
        self.held = held
        self.slow_dir: Path | None = None
        self.also_slow: list[Path] = []
        self._paths: dict[int, Path] = {}
        self._lock = threading.Lock()
        self.in_fsync = 0
        self.peak_in_fsync = 0
        """The most event-log fsyncs that were running at the same moment."""

    sync_appends = False  # every append is followed by the fsync this double controls

    def open_append(self, path: Path, *, sync: bool = False) -> int:
        fd = OS_FILE_OPS.open_append(path)
        self._paths[fd] = path
        return fd

    def write(self, fd: int, data: bytes) -> int:
        return OS_FILE_OPS.write(fd, data)

    def read_bytes(self, path: Path) -> bytes:
        return OS_FILE_OPS.read_bytes(path)

    def fsync(self, fd: int) -> None:
        path = self._paths.get(fd)
        if path is None:  # the temporary file of an atomic write, not an event log
            OS_FILE_OPS.fsync(fd)
            return
        with self._lock:
            self.in_fsync += 1
            self.peak_in_fsync = max(self.peak_in_fsync, self.in_fsync)
        try:
            if path is not None and any(d in path.parents for d in self.slow_dirs()):
                if self.held is not None:
                    self.held.wait()
                else:
                    time.sleep(self.delay)
            OS_FILE_OPS.fsync(fd)
        finally:
            with self._lock:
                self.in_fsync -= 1

    def slow_dirs(self) -> list[Path]:
        return [*self.also_slow, *([self.slow_dir] if self.slow_dir is not None else [])]

    def truncate(self, fd: int, size: int) -> None:
        OS_FILE_OPS.truncate(fd, size)

    def size(self, fd: int) -> int:
        return OS_FILE_OPS.size(fd)

    def close(self, fd: int) -> None:
        self._paths.pop(fd, None)
        OS_FILE_OPS.close(fd)
