"""Asks from asyncio to actor threads: answers, timeouts, and the shared deadline timer."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from duragent.session import NewSession, SessionRegistry, SessionTimeoutError
from duragent.session.bridge import ask
from duragent.store import SessionStore
from tests.session.slow_ops import SlowFsyncOps


async def test_a_shorter_timeout_after_a_longer_one_still_fires_on_time(tmp_path: Path) -> None:
    ops = SlowFsyncOps(delay=1.5)
    reg = SessionRegistry(SessionStore(tmp_path, ops))
    await reg.open()
    try:
        first = await reg.create(NewSession(agent="a"))
        second = await reg.create(NewSession(agent="a"))
        ops.also_slow = [tmp_path / first, tmp_path / second]
        long_ask = asyncio.create_task(
            ask(reg._live[first].ref, "add_user_message", within=5.0, content="x")
        )
        start = time.perf_counter()
        with pytest.raises(SessionTimeoutError, match=r"within 0\.3s"):
            await ask(reg._live[second].ref, "add_user_message", within=0.3, content="y")
        elapsed = time.perf_counter() - start
        result = await long_ask  # the long one is unaffected and answers
    finally:
        ops.also_slow = []
        await reg.aclose()
    assert elapsed < 1.2
    assert result.seq == 2


async def test_many_asks_in_a_row_each_keep_their_own_deadline(tmp_path: Path) -> None:
    ops = SlowFsyncOps(delay=0.6)
    reg = SessionRegistry(SessionStore(tmp_path, ops))
    await reg.open()
    try:
        ids = [await reg.create(NewSession(agent="a")) for _ in range(3)]
        ops.also_slow = [tmp_path / ids[2]]
        fast = [
            await ask(reg._live[s].ref, "add_user_message", within=0.3, content="q")
            for s in ids[:2]
        ]
        with pytest.raises(SessionTimeoutError):
            await ask(reg._live[ids[2]].ref, "add_user_message", within=0.3, content="q")
    finally:
        ops.also_slow = []
        await reg.aclose()
    assert [r.seq for r in fast] == [2, 2]
