"""Asks from asyncio to actor threads: answers, timeouts, and the shared deadline timer."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from duragent.session import NewSession, SessionRegistry, SessionTimeoutError
from duragent.session.bridge import ask
from duragent.session.operations import SessionOps
from duragent.store import SessionStore
from tests.session.slow_ops import SlowFsyncOps


async def test_a_shorter_timeout_after_a_longer_one_still_fires_on_time(tmp_path: Path) -> None:
    """Both disks stall until released: the short ask must time out while the long one (600 s)
    still waits; a timer that waited for the longer deadline first would not fire within the
    test's generous 60 s guard."""
    ops = SlowFsyncOps(held=threading.Event())
    reg = SessionRegistry(SessionStore(tmp_path, ops))
    await reg.open()
    try:
        first = await reg.create(NewSession(agent="a"))
        second = await reg.create(NewSession(agent="a"))
        ops.also_slow = [tmp_path / first, tmp_path / second]
        long_ask = asyncio.create_task(
            ask(reg._live[first].ref, 600.0, SessionOps.add_user_message, content="x")
        )
        short = ask(reg._live[second].ref, 0.3, SessionOps.add_user_message, content="y")
        with pytest.raises(SessionTimeoutError, match=r"within 0\.3s"):
            await asyncio.wait_for(short, 60)
        long_was_waiting = not long_ask.done()
        assert ops.held is not None
        ops.held.set()
        result = await long_ask  # the long one is unaffected and answers
    finally:
        ops.also_slow = []
        assert ops.held is not None
        ops.held.set()
        await reg.aclose()
    assert long_was_waiting
    assert result.seq == 2


async def test_many_asks_in_a_row_each_keep_their_own_deadline(tmp_path: Path) -> None:
    ops = SlowFsyncOps(held=threading.Event())  # the third session's disk stalls until released
    reg = SessionRegistry(SessionStore(tmp_path, ops))
    await reg.open()
    try:
        ids = [await reg.create(NewSession(agent="a")) for _ in range(3)]
        ops.also_slow = [tmp_path / ids[2]]
        fast = [
            await ask(reg._live[s].ref, 60, SessionOps.add_user_message, content="q")
            for s in ids[:2]
        ]
        stalled = ask(reg._live[ids[2]].ref, 0.3, SessionOps.add_user_message, content="q")
        with pytest.raises(SessionTimeoutError):
            await asyncio.wait_for(stalled, 60)
    finally:
        ops.also_slow = []
        assert ops.held is not None
        ops.held.set()
        await reg.aclose()
    assert [r.seq for r in fast] == [2, 2]
