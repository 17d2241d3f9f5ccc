"""The process's calendar time: one "now" for everything that stamps a time or compares with one.

Event timestamps, a session's ``updated_at`` and its TTL expiry, the age of buffered group
chatter, the memory tool's "today", the ``{{date}}`` of a system prompt, schedule and process
records all read the time here, so a process never compares a stamp from one clock with a
"now" from another. It is the wall clock. A process that simulates a calendar
(``bench/year/serve.py`` walks a year in half an hour) installs its source once, before it
serves, with ``use_time_source``.

Ids read it too (``core.ids``: a ULID carries its creation time, and a saved output's
retention is judged by it). What is *not* read here: durations and deadlines
(``time.monotonic`` and the event loop's clock: a simulated calendar must not stretch a
timeout), and times another machine checks (signed cluster hops, a provider's
``Retry-After`` date, log lines).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

__all__ = ["local_now", "now_seconds", "use_time_source", "utc_now"]

_source: Callable[[], float] = time.time


def use_time_source(source: Callable[[], float]) -> None:
    """Read Unix seconds from ``source`` from now on (``time.time`` restores the wall clock)."""
    global _source
    _source = source


def now_seconds() -> float:
    """Unix time in seconds."""
    return _source()


def utc_now() -> datetime:
    """Now, aware, in UTC."""
    return datetime.fromtimestamp(_source(), UTC)


def local_now() -> datetime:
    """Now, naive, in the machine's time zone (what a person calls "today")."""
    return datetime.fromtimestamp(_source())
