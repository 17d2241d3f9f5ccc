"""Pinning the runtime's threads to one CPU; child processes still get every CPU."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from duragent.cpu import current_cpu, pin_current_thread, restore_current_thread
from duragent.tools._process import run_process

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs CPU affinity and at least two CPUs",
)

PRINT_MASK = "import os; print(sorted(os.sched_getaffinity(0)))"


def in_fresh_thread(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in a new thread (pinning must not leak into the test runner's thread)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def test_the_current_cpu_is_one_the_thread_may_use() -> None:
    assert current_cpu() in os.sched_getaffinity(0)


def test_pinning_holds_the_thread_and_the_threads_it_starts_to_one_cpu() -> None:
    def scenario() -> tuple[int | None, set[int], set[int], set[int]]:
        cpu = pin_current_thread()
        mine = os.sched_getaffinity(0)
        seen: dict[str, set[int]] = {}
        child = threading.Thread(target=lambda: seen.update(mask=os.sched_getaffinity(0)))
        child.start()
        child.join()
        restore_current_thread()
        return cpu, mine, seen["mask"], os.sched_getaffinity(0)

    everything = os.sched_getaffinity(0)
    cpu, pinned, started, restored = in_fresh_thread(scenario)
    assert cpu in everything
    assert pinned == {cpu}
    assert started == {cpu}
    assert restored == everything


def test_programs_started_by_tools_get_every_cpu(tmp_path: Path) -> None:
    def scenario() -> tuple[str, set[int]]:
        pin_current_thread()
        try:
            result = asyncio.run(
                run_process([sys.executable, "-c", PRINT_MASK], cwd=tmp_path, time_limit=30)
            )
            return result.stdout, os.sched_getaffinity(0)
        finally:
            restore_current_thread()

    everything = os.sched_getaffinity(0)
    stdout, after = in_fresh_thread(scenario)
    assert stdout.strip() == str(sorted(everything))
    assert len(after) == 1  # the spawning thread went back to its CPU
