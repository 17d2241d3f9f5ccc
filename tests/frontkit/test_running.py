"""``await_turn``: a caller may stop waiting; the turn goes on under the task owner."""

from __future__ import annotations

import asyncio

import pytest

from duragent.frontkit import await_turn
from duragent.lifecycle.tasks import BackgroundTasks


async def turn(gate: asyncio.Event, done: list[str]) -> str:
    await gate.wait()
    done.append("finished")
    return "reply"


async def test_a_turn_that_ends_in_time_is_the_callers_result() -> None:
    tasks = BackgroundTasks()
    gate, done = asyncio.Event(), list[str]()
    gate.set()
    assert await await_turn(tasks, turn(gate, done), wait_at_most=5, name="t") == "reply"
    assert len(tasks) == 0


async def test_a_turn_past_the_wait_goes_on_under_the_owner() -> None:
    tasks = BackgroundTasks()
    gate, done = asyncio.Event(), list[str]()
    with pytest.raises(TimeoutError):
        await await_turn(tasks, turn(gate, done), wait_at_most=0.05, name="t")
    assert len(tasks) == 1
    gate.set()
    await asyncio.sleep(0.05)
    assert done == ["finished"]
    assert len(tasks) == 0


async def test_a_cancelled_waiter_leaves_the_turn_running_until_the_owner_stops() -> None:
    tasks = BackgroundTasks(grace_seconds=1)
    gate, done = asyncio.Event(), list[str]()
    waiter = asyncio.create_task(await_turn(tasks, turn(gate, done), wait_at_most=None, name="t"))
    await asyncio.sleep(0.05)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert len(tasks) == 1
    await tasks.stop()  # cancels the turn: it never finished
    assert done == []
    assert len(tasks) == 0
