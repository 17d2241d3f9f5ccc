"""RepeatFilter: a record repeated in a loop becomes one line per interval, with a count."""

from __future__ import annotations

import logging
import sys

from duragent.core.logrepeat import RepeatFilter


def _record(msg: str = "accept failed", *, exc: bool = True) -> logging.LogRecord:
    info = None
    if exc:
        try:
            raise OSError(24, "Too many open files")
        except OSError:
            info = sys.exc_info()
    return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, msg, None, info)


def test_repeats_inside_the_interval_are_dropped_and_then_counted() -> None:
    now = [0.0]
    repeats = RepeatFilter(60, clock=lambda: now[0])
    first = _record()
    assert repeats.filter(first)
    assert first.exc_info is not None  # the first keeps its traceback
    assert [repeats.filter(_record()) for _ in range(4000)] == [False] * 4000
    now[0] = 61
    summary = _record()
    assert repeats.filter(summary)
    assert summary.exc_info is None
    assert summary.getMessage() == "accept failed [repeated; 4000 more like it were dropped]"


def test_different_messages_are_not_collapsed() -> None:
    repeats = RepeatFilter(60, clock=lambda: 0.0)
    assert repeats.filter(_record("one", exc=False))
    assert repeats.filter(_record("two", exc=False))
    assert not repeats.filter(_record("one", exc=False))


def test_the_same_message_with_another_exception_type_is_not_collapsed() -> None:
    repeats = RepeatFilter(60, clock=lambda: 0.0)
    assert repeats.filter(_record("crash"))
    assert not repeats.filter(_record("crash"))
    try:
        raise ValueError("other")
    except ValueError:
        other = logging.LogRecord("x", logging.ERROR, __file__, 1, "crash", None, sys.exc_info())
    other.name = "asyncio"
    assert repeats.filter(other)
