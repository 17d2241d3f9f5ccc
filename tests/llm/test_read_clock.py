"""``ReadClock``: one timer per stream keeps the idle limit per read and the call's deadline."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from duragent.llm.read_clock import ReadClock


async def timed_read(clock: ReadClock, seconds: float) -> str:
    """A read taking ``seconds``: "ok", or why the clock stopped it."""
    clock.start_read()
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError as cancelled:
        if clock.timed_out(cancelled):
            return str(clock.expired)
        raise
    finally:
        clock.end_read()
    return "ok"


async def test_reads_within_the_idle_limit_go_on_however_long_the_stream() -> None:
    loop = asyncio.get_running_loop()
    clock = ReadClock(loop.time() + 30, idle=0.15)
    try:
        results = [await timed_read(clock, 0.05) for _ in range(8)]  # 0.4 s in all
    finally:
        clock.close()
    assert results == ["ok"] * 8


async def test_a_read_longer_than_the_idle_limit_is_stopped_as_idle() -> None:
    loop = asyncio.get_running_loop()
    clock = ReadClock(loop.time() + 30, idle=0.1)
    try:
        assert await timed_read(clock, 0.02) == "ok"
        assert await timed_read(clock, 5) == "idle"
    finally:
        clock.close()


async def test_the_deadline_stops_a_read_before_the_idle_limit_would() -> None:
    loop = asyncio.get_running_loop()
    clock = ReadClock(loop.time() + 0.1, idle=10)
    try:
        assert await timed_read(clock, 5) == "deadline"
    finally:
        clock.close()


async def test_time_between_reads_is_not_idle_but_counts_against_the_deadline() -> None:
    loop = asyncio.get_running_loop()
    clock = ReadClock(loop.time() + 0.3, idle=0.1)
    try:
        assert await timed_read(clock, 0.01) == "ok"
        await asyncio.sleep(0.2)  # the caller is busy with an item: not idle
        assert await timed_read(clock, 0.01) == "ok"
        await asyncio.sleep(0.2)  # past the deadline now
        assert await timed_read(clock, 5) == "deadline"
    finally:
        clock.close()


async def test_someone_elses_cancellation_stays_a_cancellation() -> None:
    loop = asyncio.get_running_loop()
    clock = ReadClock(loop.time() + 30, idle=10)
    reading = asyncio.create_task(timed_read(clock, 5))
    await asyncio.sleep(0.05)
    reading.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reading
    clock.close()


async def test_a_stream_of_many_reads_arms_a_timer_once() -> None:
    """The point of the clock: no timer handle per token."""
    loop = asyncio.get_running_loop()
    armed: list[Any] = []
    call_at = loop.call_at

    def counting_call_at(when: float, callback: Any, *args: Any) -> asyncio.TimerHandle:
        armed.append(callback)
        return call_at(when, callback, *args)

    loop.call_at = counting_call_at  # type: ignore[method-assign,assignment]
    try:
        clock = ReadClock(loop.time() + 30, idle=5)
        for _ in range(200):
            assert await timed_read(clock, 0) == "ok"
        clock.close()
    finally:
        del loop.call_at  # the class's own again
    assert len(armed) == 1
