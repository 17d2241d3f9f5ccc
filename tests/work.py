"""Counting the work code does, instead of timing it.

A timed comparison in a test fails when the machine is busy: another process takes the CPU
in the middle of one of the two runs. The number of function calls (Python and built-in) a
piece of code makes is the same however loaded the machine is, and it still tells a
per-item transform (hundreds of calls per message) from a pre-built body (a few). The
timings themselves belong in ``bench/`` (a table), not in the suite.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")

_COUNTED = frozenset({"call", "c_call"})


class _Counter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event in _COUNTED:
            self.calls += 1


def calls_made(work: Callable[[], object]) -> int:
    """How many function calls ``work()`` made in this thread."""
    counter = _Counter()
    previous = sys.getprofile()
    sys.setprofile(counter)
    try:
        work()
    finally:
        sys.setprofile(previous)
    return counter.calls


async def calls_awaiting(work: Awaitable[T]) -> tuple[int, T]:
    """How many function calls this thread made while ``work`` was awaited, and its result.

    Everything the thread ran meanwhile counts (an in-process fake server's handlers too), so
    compare two runs that share the rest.
    """
    counter = _Counter()
    previous = sys.getprofile()
    sys.setprofile(counter)
    try:
        result = await work
    finally:
        sys.setprofile(previous)
    return counter.calls, result


def lines_run(work: Callable[[], object]) -> int:
    """How many Python lines ``work()`` executed in this thread (each loop pass counts).

    Where the cost is a Python loop rather than calls (a comprehension over a record), this
    tells walking what is new from walking everything.
    """
    lines = 0

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal lines
        if event == "line":
            lines += 1
        return trace

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        work()
    finally:
        sys.settrace(previous)
    return lines
