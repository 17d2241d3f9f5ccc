"""How many session actors may run Python at the same moment.

Every live session has its own thread, but Python runs one thread at a time (the GIL). With a
thousand actors ready at once they convoy on the GIL, and the event-loop thread — which serves
HTTP and every other front end — waits its turn behind them: measured here, p99 event-loop
stalls of 600–800 ms at 1,000 busy sessions. The gate lets only ``limit`` actors work at once;
the others wait on a semaphore (blocked, not competing for the GIL). The fsync stays inside
the gate: releasing it around the fsync was measured too, and the re-acquiring herd brought
the stalls back (16 ms p99 vs 3 ms). Measured at 1,000 busy sessions: p99 stall 600 ms →
3 ms, throughput equal or better (``bench/sessions.py``).
"""

from __future__ import annotations

import sys
import threading
from types import TracebackType

__all__ = ["ACTIVE_GATE", "DEFAULT_ACTIVE_ACTORS", "ActorGate", "tune_interpreter"]

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


ACTIVE_GATE = ActorGate()


SWITCH_INTERVAL_SECONDS = 0.001


def tune_interpreter() -> None:
    """Let the event loop take the GIL back sooner from a busy actor (5 ms → 1 ms).

    A server process calls this once; with CPython's default 5 ms switch interval an actor
    doing Python work delays the event loop by up to 5 ms (measured p99 stall 5.3 ms with one
    busy session; ~3 ms at 1 ms).
    """
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
