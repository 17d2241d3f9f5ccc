from __future__ import annotations

import asyncio

import pytest

from duragent.session.keyed_locks import KeyedLocks


async def test_ten_thousand_distinct_chats_leave_no_lock_behind() -> None:
    locks: KeyedLocks[tuple[str, str, str]] = KeyedLocks()
    for i in range(10_000):
        async with locks.hold(("telegram", str(i), "a")):
            assert len(locks) == 1
    assert len(locks) == 0


async def test_ten_thousand_concurrent_chats_are_dropped_once_all_let_go() -> None:
    locks: KeyedLocks[int] = KeyedLocks()
    release, all_inside = asyncio.Event(), asyncio.Event()
    inside = 0

    async def hold(key: int) -> None:
        nonlocal inside
        async with locks.hold(key):
            inside += 1
            if inside == 10_000:
                all_inside.set()
            await release.wait()

    tasks = [asyncio.create_task(hold(i)) for i in range(10_000)]
    await asyncio.wait_for(all_inside.wait(), timeout=120)
    assert len(locks) == 10_000  # each chat held at once: all distinct, none blocked
    release.set()
    await asyncio.gather(*tasks)
    assert len(locks) == 0


async def test_one_key_is_held_by_one_task_at_a_time() -> None:
    locks: KeyedLocks[str] = KeyedLocks()
    holding = 0
    most = 0

    async def work() -> None:
        nonlocal holding, most
        async with locks.hold("chat"):
            holding += 1
            most = max(most, holding)
            await asyncio.sleep(0)
            holding -= 1

    await asyncio.gather(*(work() for _ in range(50)))
    assert most == 1
    assert len(locks) == 0


async def test_a_cancelled_waiter_and_a_failing_holder_let_go_of_the_entry() -> None:
    locks: KeyedLocks[str] = KeyedLocks()
    entered = asyncio.Event()
    release = asyncio.Event()

    async def holder() -> None:
        async with locks.hold("chat"):
            entered.set()
            await release.wait()
            raise RuntimeError("the block failed")

    async def waiter() -> None:
        async with locks.hold("chat"):
            pytest.fail("the waiter was cancelled before its turn")

    first = asyncio.create_task(holder())
    await entered.wait()
    second = asyncio.create_task(waiter())
    await asyncio.sleep(0)
    second.cancel()
    with pytest.raises(asyncio.CancelledError):
        await second
    assert len(locks) == 1  # the holder still has it
    release.set()
    with pytest.raises(RuntimeError, match="the block failed"):
        await first
    assert len(locks) == 0
