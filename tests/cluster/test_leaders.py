"""A loop run on one node only: it survives its own failures, and lets the lease go meanwhile."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from duragent.cluster import run_as_leader
from duragent.store.cluster import MemoryCluster
from tests.polling import eventually


async def test_a_loop_that_fails_is_started_again_and_its_error_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    leaders = MemoryCluster(lease_seconds=0.15).node("a").leaders
    starts = 0

    async def loop() -> None:
        nonlocal starts
        starts += 1
        if starts <= 2:
            raise RuntimeError(f"failure number {starts}")
        await asyncio.Event().wait()

    with caplog.at_level(logging.ERROR):
        leading = asyncio.create_task(run_as_leader(leaders, "scheduler", loop))
        try:
            assert await eventually(lambda: starts == 3)
            assert not leading.done()  # still leading, with the loop running again
        finally:
            leading.cancel()
            await asyncio.gather(leading, return_exceptions=True)
    assert "scheduler: the loop failed" in caplog.text
    assert "failure number 2" in caplog.text


async def test_while_a_failed_loop_pauses_another_node_may_take_the_lease() -> None:
    shared = MemoryCluster(lease_seconds=0.15)
    ran_on: list[str] = []

    def loop_on(node: str, fails: bool) -> Callable[[], Coroutine[Any, Any, None]]:
        async def loop() -> None:
            ran_on.append(node)
            if fails:
                raise RuntimeError("this node cannot run it")
            await asyncio.Event().wait()

        return loop

    a = asyncio.create_task(run_as_leader(shared.node("a").leaders, "polling", loop_on("a", True)))
    await asyncio.sleep(0.01)  # a leads first
    b = asyncio.create_task(run_as_leader(shared.node("b").leaders, "polling", loop_on("b", False)))
    try:
        assert await eventually(lambda: "b" in ran_on)
        assert ran_on[0] == "a"
    finally:
        for task in (a, b):
            task.cancel()
        await asyncio.gather(a, b, return_exceptions=True)


async def test_a_loop_that_returns_by_itself_ends_the_leading_and_lets_the_lease_go() -> None:
    shared = MemoryCluster(lease_seconds=30)

    async def gives_up() -> None:
        return None

    await asyncio.wait_for(run_as_leader(shared.node("a").leaders, "polling", gives_up), 120)
    assert shared.node("b").leaders.acquire("polling")  # free at once, not after 30 s
