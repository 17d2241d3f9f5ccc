"""A logging filter that collapses a record repeated many times into one line per interval.

A failure that recurs in a tight loop (a socket that cannot accept, a client hammering with
bad requests) must not turn into megabytes of identical tracebacks that hide everything else.
Records are "the same" when their logger, level, message template and exception type are;
the first one passes whole, later ones within ``interval`` are counted and dropped, and the
first one after the interval passes without its traceback and says how many were dropped.
Nothing is silently lost: the count is always reported on the next occurrence.

Attach it to the loggers that can flood (a ``logging.Logger`` consults its filters only for
records logged on it, not for those propagated from children). No I/O happens here.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

__all__ = ["RepeatFilter"]


class RepeatFilter(logging.Filter):
    """Let through one record per (logger, level, template, exception type) per interval."""

    def __init__(
        self, interval: float = 60.0, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, int, str], tuple[float, int]] = {}
        """key → (when the last record passed, how many were dropped since)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """False for a repeat inside the interval; the first after it reports the count."""
        kind = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] else ""
        key = (record.name, record.levelno, f"{record.msg}\0{kind}")
        now = self._clock()
        with self._lock:
            last = self._seen.get(key)
            if last is not None and now - last[0] < self.interval:
                self._seen[key] = (last[0], last[1] + 1)
                return False
            if len(self._seen) > 1000:  # many distinct messages: forget the old ones
                self._seen.clear()
            self._seen[key] = (now, 0)
        if last is not None:
            record.exc_info = None  # the first occurrence carried the traceback
            record.exc_text = None
            record.stack_info = None
            if last[1]:
                record.msg = f"{record.msg} [repeated; {last[1]} more like it were dropped]"
        return True
