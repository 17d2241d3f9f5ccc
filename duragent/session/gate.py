"""How many session actors may run Python at the same moment.

Every live session has its own thread, but Python runs one thread at a time (the GIL). With a
thousand actors ready at once they convoy on the GIL, and the event-loop thread — which serves
HTTP and every other front end — waits its turn behind them: measured here, p99 event-loop
stalls of 600–800 ms at 1,000 busy sessions. The gate lets only ``limit`` actors work at once;
the others wait on a semaphore (blocked, not competing for the GIL). Blocking I/O is done
*outside* the gate (``GatedFileOps`` releases it around fsync), so the disk still sees many
parallel fsyncs. Measured: stalls fall to single-digit milliseconds with equal or better
throughput (``bench/sessions.py``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

from duragent.store.fileops import OS_FILE_OPS, FileOps

__all__ = ["ACTIVE_GATE", "DEFAULT_ACTIVE_ACTORS", "ActorGate", "GatedFileOps"]

DEFAULT_ACTIVE_ACTORS = 4


class ActorGate:
    """A semaphore that knows whether the current thread holds it (re-entrant per thread)."""

    def __init__(self, limit: int = DEFAULT_ACTIVE_ACTORS) -> None:
        self._sem = threading.Semaphore(limit)
        self._local = threading.local()
        self.limit = limit

    def _depth(self) -> int:
        return int(getattr(self._local, "depth", 0))

    def __enter__(self) -> ActorGate:
        depth = self._depth()
        if depth == 0:
            self._sem.acquire()
        self._local.depth = depth + 1
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        depth = self._depth() - 1
        self._local.depth = depth
        if depth == 0:
            self._sem.release()

    @contextlib.contextmanager
    def outside(self) -> Iterator[None]:
        """Give the gate up for a blocking call (if this thread holds it), then take it back."""
        depth = self._depth()
        if depth == 0:
            yield
            return
        self._local.depth = 0
        self._sem.release()
        try:
            yield
        finally:
            self._sem.acquire()
            self._local.depth = depth


ACTIVE_GATE = ActorGate()


class GatedFileOps:
    """File operations whose fsync happens outside the actor gate."""

    def __init__(self, inner: FileOps = OS_FILE_OPS, gate: ActorGate = ACTIVE_GATE) -> None:
        self._inner = inner
        self._gate = gate

    def open_append(self, path: Path) -> int:
        """Open for appending."""
        return self._inner.open_append(path)

    def write(self, fd: int, data: bytes) -> int:
        """Write (fast: it lands in the page cache)."""
        return self._inner.write(fd, data)

    def fsync(self, fd: int) -> None:
        """Flush to disk with the gate released, so other actors work meanwhile."""
        with self._gate.outside():
            self._inner.fsync(fd)

    def truncate(self, fd: int, size: int) -> None:
        """Truncate."""
        self._inner.truncate(fd, size)

    def size(self, fd: int) -> int:
        """Current size."""
        return self._inner.size(fd)

    def close(self, fd: int) -> None:
        """Close."""
        self._inner.close(fd)
