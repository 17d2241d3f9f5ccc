"""One timer keeps many deadlines: each future fails on time, finished ones are forgotten."""

from __future__ import annotations

import asyncio

import pytest

from duragent.session.deadlines import Deadlines


class Expired(Exception):
    pass


async def test_each_watched_future_fails_at_its_own_deadline() -> None:
    loop = asyncio.get_running_loop()
    deadlines = Deadlines(loop, Expired)
    slow, fast, answered = loop.create_future(), loop.create_future(), loop.create_future()
    deadlines.watch(slow, 0.3, "{} late", "slow")
    deadlines.watch(fast, 0.05, "{} late", "fast")  # earlier than the newest: its own timer
    entry = deadlines.watch(answered, 0.3, "{} late", "answered")
    answered.set_result(1)
    Deadlines.done(entry)
    start = loop.time()
    with pytest.raises(Expired, match="fast late"):
        await fast
    assert loop.time() - start < 0.25
    with pytest.raises(Expired, match="slow late"):
        await slow
    assert answered.result() == 1


async def test_a_deadline_after_a_finished_longer_one_still_fires() -> None:
    loop = asyncio.get_running_loop()
    deadlines = Deadlines(loop, Expired)
    first = loop.create_future()
    entry = deadlines.watch(first, 30.0, "first")
    first.set_result(None)
    Deadlines.done(entry)
    second = loop.create_future()
    deadlines.watch(second, 0.05, "second")
    with pytest.raises(Expired, match="second"):
        await asyncio.wait_for(second, 120)
