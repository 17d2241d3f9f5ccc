"""A logging filter that bounds a flood of log records without hiding what is new.

A failure that recurs in a tight loop (a disk failing every append, a socket that cannot
accept, a client hammering with bad requests, every session of the registry out of
descriptors) must not turn into megabytes of identical tracebacks that hide everything else.

Records are of one *kind* when their logger, level, message template (``record.msg``, before
``%`` arguments) and exception type are the same. Per kind and per ``interval``:

- the first record passes whole, traceback included;
- an exact repeat (same rendered message, in the same turn: ``observability.logctx``) is dropped and
  counted;
- a *different* message of the kind (another session id, another path) passes, up to
  ``distinct`` per interval, with its exception as one line instead of a traceback; beyond
  that, dropped and counted;
- the first record of the kind after the interval passes and says how many were dropped;
  :meth:`RepeatFilter.summaries` gives a line per kind with drops not yet reported (the
  logging setup emits them at exit), so a count is never lost.

So a storm of one kind is at most ``distinct + 1`` lines a minute, and nothing is hidden
without a count. Installed on the *handlers* (``collapse_repeats``, called by the CLI's logging
setup), so every logger's records pass through it, propagated ones included (a logger's own
filters see only records logged on that logger). The filter does no I/O.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from duragent.observability.logctx import current

__all__ = ["RepeatFilter", "collapse_repeats"]

_SUMMARY = "_duragent_repeat_summary"
"""Set on a record made by ``summaries``: it passes the filter as is."""
_DECIDED = "_duragent_repeat_passed"
"""The filter's answer for a record, so a second handler with the same filter agrees."""


@dataclass(slots=True)
class _Kind:
    since: float
    """When this interval started (the first record of the kind in it passed)."""
    shown: set[str] = field(default_factory=set)
    """Rendered messages shown in this interval."""
    dropped: int = 0
    example: logging.LogRecord | None = None
    """The last record dropped, to word a summary."""


class RepeatFilter(logging.Filter):
    """Pass the first of a kind, distinct messages up to a budget, and count the rest."""

    def __init__(
        self,
        interval: float = 60.0,
        *,
        distinct: int = 20,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.interval = interval
        self.distinct = distinct
        self._clock = clock
        self._lock = threading.Lock()
        self._kinds: dict[tuple[str, int, str, str], _Kind] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        """False for a repeat, or a distinct message over the budget (both counted)."""
        if getattr(record, _SUMMARY, False):
            return True
        decided = getattr(record, _DECIDED, None)
        if decided is not None:
            return bool(decided)
        passed = self._decide(record)
        setattr(record, _DECIDED, passed)
        return passed

    def _decide(self, record: logging.LogRecord) -> bool:
        exc_type = record.exc_info[0] if record.exc_info else None
        key = (record.name, record.levelno, str(record.msg), exc_type.__name__ if exc_type else "")
        # The same words about another turn are no repeat: each turn's lines stay followable
        # by its id (observability/logctx.py); the ``distinct`` budget still bounds a flood.
        rendered = record.getMessage() + "\x00" + current().get("turn_id", "")
        now = self._clock()
        with self._lock:
            kind = self._kinds.get(key)
            if kind is None or now - kind.since >= self.interval:
                self._forget_some()
                self._kinds[key] = _Kind(since=now, shown={rendered})
                if kind is not None and kind.dropped:
                    _annotate(record, kind.dropped, now - kind.since)
                return True
            if rendered in kind.shown or len(kind.shown) > self.distinct:
                kind.dropped += 1
                kind.example = record
                return False
            kind.shown.add(rendered)
        _one_line_exception(record)
        return True

    def summaries(self) -> list[logging.LogRecord]:
        """A record per kind with drops not yet reported (and forget those counts)."""
        now = self._clock()
        out: list[logging.LogRecord] = []
        with self._lock:
            for kind in self._kinds.values():
                if kind.dropped and kind.example is not None:
                    record = logging.makeLogRecord(kind.example.__dict__)
                    record.exc_info = None
                    record.exc_text = None
                    record.stack_info = None
                    _annotate(record, kind.dropped, now - kind.since)
                    setattr(record, _SUMMARY, True)
                    out.append(record)
                    kind.dropped = 0
        return out

    def _forget_some(self) -> None:
        """Bound memory: past 1000 kinds, forget those whose interval is over with no drops."""
        if len(self._kinds) <= 1000:
            return
        now = self._clock()
        for key, kind in list(self._kinds.items()):
            if not kind.dropped and now - kind.since >= self.interval:
                del self._kinds[key]
        if len(self._kinds) > 1000:  # many kinds all dropping: keep the counts' newest half
            for key in list(self._kinds)[:500]:
                del self._kinds[key]


def _annotate(record: logging.LogRecord, dropped: int, seconds: float) -> None:
    """Say how many records of this kind were dropped; the first one carried the traceback."""
    _one_line_exception(record)
    record.msg = (
        f"{record.getMessage()} [{dropped} more like it in the last {seconds:.0f}s were dropped]"
    )
    record.args = None


def _one_line_exception(record: logging.LogRecord) -> None:
    """Replace a record's traceback by one line naming the exception."""
    if not record.exc_info or record.exc_info[1] is None:
        return
    exc = record.exc_info[1]
    record.msg = f"{record.getMessage()} ({type(exc).__name__}: {exc})"
    record.args = None
    record.exc_info = None
    record.exc_text = None


def collapse_repeats(handlers: Iterable[logging.Handler]) -> RepeatFilter:
    """Install one :class:`RepeatFilter` on ``handlers``; emit its ``summaries`` at exit.

    (atexit runs this before ``logging.shutdown``, which was registered first.)
    """
    repeats = RepeatFilter()
    targets = [
        handler
        for handler in handlers
        if not any(isinstance(f, RepeatFilter) for f in handler.filters)  # set up twice
    ]
    for handler in targets:
        handler.addFilter(repeats)

    def report() -> None:
        for record in repeats.summaries():
            for handler in targets:
                handler.handle(record)

    atexit.register(report)
    return repeats
