"""The one owner of background tasks keeps them alive, logs failures, and ends them on stop."""

from __future__ import annotations

import asyncio
import gc
import logging

import pytest

from duragent.lifecycle.tasks import BackgroundTasks


async def test_a_task_held_only_by_the_owner_runs_to_the_end() -> None:
    done = asyncio.Event()

    async def work() -> None:
        await asyncio.sleep(0.01)
        gc.collect()  # a task nobody references could be collected here
        done.set()

    tasks = BackgroundTasks()
    tasks.spawn(work(), name="work")
    gc.collect()
    await asyncio.wait_for(done.wait(), 120)
    await asyncio.sleep(0)
    assert len(tasks) == 0


async def test_a_task_that_fails_is_logged_with_its_name_not_lost(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def boom() -> None:
        raise ValueError("the model answered nonsense")

    tasks = BackgroundTasks()
    with caplog.at_level(logging.ERROR, logger="duragent.lifecycle.tasks"):
        tasks.spawn(boom(), name="turn-s1")
        await asyncio.sleep(0.01)
    assert "background task turn-s1 failed: the model answered nonsense" in caplog.text
    assert caplog.records[-1].exc_info is not None  # with its traceback


async def test_stop_cancels_outstanding_tasks_and_waits_for_them() -> None:
    cleaned: list[str] = []

    async def forever(name: str) -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            cleaned.append(name)

    tasks = BackgroundTasks()
    first = tasks.spawn(forever("a"), name="a")
    second = tasks.spawn(forever("b"), name="b")
    await asyncio.sleep(0)
    await tasks.stop()
    assert first.cancelled()
    assert second.cancelled()
    assert sorted(cleaned) == ["a", "b"]
    assert len(tasks) == 0


async def test_a_clean_up_scheduled_by_a_cancelled_task_still_runs_during_stop() -> None:
    tasks = BackgroundTasks()
    marked: list[str] = []

    async def mark_active() -> None:
        await asyncio.sleep(0.01)
        marked.append("active")

    turn = tasks.spawn(asyncio.sleep(3600), name="turn")
    turn.add_done_callback(lambda _: tasks.spawn(mark_active(), name="mark-active"))
    await asyncio.sleep(0)
    await tasks.stop()
    assert marked == ["active"]


async def test_a_task_adopted_after_its_awaiter_gave_up_is_owned_and_cancelled_on_stop() -> None:
    tasks = BackgroundTasks()
    task = asyncio.create_task(asyncio.sleep(3600), name="turn-after-408")
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(asyncio.shield(task), 0.01)
    tasks.adopt(task)
    assert len(tasks) == 1
    await tasks.stop()
    assert task.cancelled()


async def test_a_task_handed_over_after_stop_is_cancelled_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tasks = BackgroundTasks()
    await tasks.stop()
    with caplog.at_level(logging.WARNING, logger="duragent.lifecycle.tasks"):
        late = tasks.spawn(asyncio.sleep(3600), name="late")
        await asyncio.wait([late])
    assert late.cancelled()
    assert "background task late started after shutdown: cancelled" in caplog.text


async def test_a_task_that_refuses_to_end_does_not_hold_stop_past_its_grace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = asyncio.Event()

    async def stubborn() -> None:
        while not release.is_set():
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                continue  # swallows every cancellation

    tasks = BackgroundTasks(grace_seconds=0.05)
    tasks.spawn(stubborn(), name="stubborn")
    await asyncio.sleep(0)
    loop = asyncio.get_running_loop()
    began = loop.time()
    with caplog.at_level(logging.WARNING, logger="duragent.lifecycle.tasks"):
        await tasks.stop()
    assert loop.time() - began < 3
    assert "background tasks still running after stop: stubborn" in caplog.text
    release.set()
    for task in asyncio.all_tasks():
        if task.get_name() == "stubborn":
            task.cancel()
            await asyncio.wait([task])
