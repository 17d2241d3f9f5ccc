"""``UnderWay``: a gateway's stop lets the calls under way end before it closes its client."""

from __future__ import annotations

import asyncio

import pytest

from duragent.frontkit.under_way import UnderWay


async def test_ended_waits_for_the_calls_under_way_and_sets_stopping() -> None:
    under_way = UnderWay("test")
    release = asyncio.Event()

    async def call() -> None:
        with under_way.one():
            await release.wait()

    running = asyncio.create_task(call())
    await asyncio.sleep(0)
    assert len(under_way) == 1
    ending = asyncio.create_task(under_way.ended(grace=60))
    await asyncio.sleep(0.05)
    assert under_way.stopping
    assert not ending.done()  # the call is still under way
    release.set()
    assert await ending == 0
    await running


async def test_a_call_that_fails_or_is_cancelled_is_no_longer_under_way() -> None:
    under_way = UnderWay("test")
    with pytest.raises(RuntimeError), under_way.one():
        raise RuntimeError("refused")

    async def hangs() -> None:
        with under_way.one():
            await asyncio.Event().wait()

    task = asyncio.create_task(hangs())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(under_way) == 0
    assert await under_way.ended(grace=60) == 0


async def test_a_call_that_outlives_the_grace_is_left_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    under_way = UnderWay("test")

    async def hangs() -> None:
        with under_way.one():
            await asyncio.Event().wait()

    task = asyncio.create_task(hangs())
    await asyncio.sleep(0)
    assert await under_way.ended(grace=0.05) == 1
    assert "1 call(s) still under way" in caplog.text
    task.cancel()
