"""The admission limit: fixed, or adapting to how long asks wait on the disk."""

from __future__ import annotations

import asyncio

import pytest

from duragent.session.admission import AskAdmission, AskMix
from duragent.session.bridge import SessionTimeoutError


def mix_after(disk: float, total: float, asks: int = 200) -> AskMix:
    mix = AskMix()
    for _ in range(asks):
        mix.observe(disk, total)
    return mix


def test_a_fast_disk_keeps_the_limit_at_its_floor() -> None:
    # this VM: ~0.1 ms in the write, ~0.07 ms of Python per ask
    assert mix_after(0.0001, 0.00017).limit(8, 32) == 8


def test_a_slow_disk_raises_the_limit_so_writes_overlap() -> None:
    # a 3.6 ms fsync with ~0.1 ms of Python: half an ask runnable is 0.5 × (1 + 36) in flight
    assert 17 <= mix_after(0.0036, 0.0037).limit(8, 32) <= 19


def test_the_limit_never_passes_its_ceiling() -> None:
    assert mix_after(0.050, 0.0501).limit(8, 32) == 32


def test_slower_python_lowers_the_limit_again() -> None:
    mix = mix_after(0.0036, 0.0037)
    for _ in range(200):
        mix.observe(0.0036, 0.0046)  # GIL contention: the same write, more time around it
    assert mix.limit(8, 32) < 17


async def test_when_the_limit_rises_waiting_asks_are_admitted_at_the_next_leave() -> None:
    mix = AskMix()
    admission = AskAdmission(2, high=8, mix=mix)
    assert admission.try_enter()
    assert admission.try_enter()
    waiters = [asyncio.create_task(admission.enter(5)) for _ in range(3)]
    await asyncio.sleep(0)
    assert admission.in_use == 2
    for _ in range(200):
        mix.observe(0.004, 0.0041)  # the disk turned out slow
    admission.leave()
    await asyncio.gather(*waiters)
    assert admission.in_use == 4


async def test_a_waiter_that_timed_out_does_not_block_the_queue() -> None:
    admission = AskAdmission(1)
    assert admission.try_enter()
    with pytest.raises(SessionTimeoutError, match="no session capacity"):
        await admission.enter(0.05)
    admission.leave()
    assert admission.try_enter()


def test_a_fixed_limit_ignores_the_disk() -> None:
    admission = AskAdmission(3)
    assert [admission.try_enter() for _ in range(4)] == [True, True, True, False]
    assert admission.limit == 3
