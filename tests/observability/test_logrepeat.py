"""RepeatFilter: a flood of one kind of record is a few lines with a count; nothing new hidden."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap

from duragent.observability.logrepeat import RepeatFilter


def _record(
    msg: str = "accept failed", *args: object, exc: bool = True, name: str = "asyncio"
) -> logging.LogRecord:
    info = None
    if exc:
        try:
            raise OSError(24, "Too many open files")
        except OSError:
            info = sys.exc_info()
    return logging.LogRecord(name, logging.ERROR, __file__, 1, msg, args or None, info)


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
    assert summary.getMessage() == (
        "accept failed (OSError: [Errno 24] Too many open files) "
        "[4000 more like it in the last 61s were dropped]"
    )


def test_different_messages_are_not_collapsed() -> None:
    repeats = RepeatFilter(60, clock=lambda: 0.0)
    assert repeats.filter(_record("one", exc=False))
    assert repeats.filter(_record("two", exc=False))
    assert not repeats.filter(_record("one", exc=False))


def test_the_same_template_with_other_arguments_passes_up_to_a_budget_then_is_counted() -> None:
    repeats = RepeatFilter(60, distinct=3, clock=lambda: 0.0)
    passed = [r for n in range(10) if repeats.filter(r := _record("session %s failed", n))]
    assert [r.getMessage() for r in passed] == [
        "session 0 failed",  # the first keeps its traceback
        "session 1 failed (OSError: [Errno 24] Too many open files)",
        "session 2 failed (OSError: [Errno 24] Too many open files)",
        "session 3 failed (OSError: [Errno 24] Too many open files)",
    ]
    assert passed[0].exc_info is not None
    [summary] = repeats.summaries()
    assert summary.getMessage().endswith("[6 more like it in the last 0s were dropped]")
    assert repeats.summaries() == []  # reported once


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


def test_two_handlers_with_the_filter_see_the_same_records() -> None:
    repeats = RepeatFilter(60, clock=lambda: 0.0)
    record = _record()
    assert repeats.filter(record)
    assert repeats.filter(record)  # the second handler asks about the same record


STORM = textwrap.dedent(
    """
    import logging
    from duragent.cli.main import _setup_logging

    _setup_logging(0, False)  # what `duragent serve` runs first
    log = logging.getLogger("duragent.session.registry")
    for n in range(20000):
        try:
            raise OSError(24, "Too many open files")
        except OSError:
            log.exception("append failed")
    for n in range(500):
        logging.getLogger("duragent.store.health").error("session s%d: write failed", n)
    logging.getLogger("duragent.runtime").info("something else")
    """
)


def test_a_storm_of_identical_errors_through_the_serve_logging_setup_is_a_few_lines() -> None:
    done = subprocess.run(
        [sys.executable, "-c", STORM],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
        check=True,
    )
    lines = done.stderr.splitlines()
    assert done.stderr.count("Traceback") == 1
    assert sum("append failed" in line for line in lines) == 2  # first, and the count at exit
    assert any("[19999 more like it in the last" in line for line in lines), lines[-5:]
    writes = [line for line in lines if "write failed" in line]
    assert "session s0: write failed" in writes[0]
    assert len(writes) == 22  # 21 distinct ones, then the count of the other 479
    assert "[479 more like it in the last" in writes[-1]
    assert any("something else" in line for line in lines)
    assert len(lines) < 60
