"""The registry admits a bounded number of asks to actor threads, on the event loop; the
interpreter is tuned for many session threads while serving."""

from __future__ import annotations

import asyncio
import gc
import sys
from pathlib import Path

import pytest

from duragent.session import NewSession, RegistrySettings, SessionRegistry, SessionTimeoutError
from duragent.session.gate import GC_THRESHOLDS, SWITCH_INTERVAL_SECONDS, tune_interpreter
from duragent.store import SessionStore
from tests.session.slow_ops import SlowFsyncOps


async def test_no_more_asks_than_the_limit_reach_actor_threads_at_once(tmp_path: Path) -> None:
    ops = SlowFsyncOps(delay=0.05)
    reg = SessionRegistry(SessionStore(tmp_path, ops), RegistrySettings(active_asks=2))
    await reg.open()
    try:
        ids = [await reg.create(NewSession(agent="a")) for _ in range(8)]
        ops.also_slow = [tmp_path / sid for sid in ids]
        ops.peak_in_fsync = 0
        await asyncio.gather(*(reg.handle(s).add_user_message(content="x") for s in ids))
    finally:
        ops.also_slow = []
        await reg.aclose()
    assert ops.peak_in_fsync == 2


async def test_a_hung_actor_holds_its_permit_only_until_its_ask_times_out(
    tmp_path: Path,
) -> None:
    ops = SlowFsyncOps(delay=2.0)
    settings = RegistrySettings(active_asks=1, ask_timeout=0.5)
    reg = SessionRegistry(SessionStore(tmp_path, ops), settings)
    await reg.open()
    try:
        hung = await reg.create(NewSession(agent="a"))
        healthy = await reg.create(NewSession(agent="a"))
        ops.slow_dir = tmp_path / hung
        stuck = asyncio.create_task(reg.handle(hung).add_user_message(content="x"))
        await asyncio.sleep(0.3)
        result = await reg.handle(healthy).add_user_message(content="y")
        with pytest.raises(SessionTimeoutError):
            await stuck
    finally:
        ops.slow_dir = None
        await reg.aclose()
    assert result.seq == 2


async def test_waiting_for_capacity_counts_against_the_ask_timeout(tmp_path: Path) -> None:
    ops = SlowFsyncOps(delay=2.0)
    settings = RegistrySettings(active_asks=1, ask_timeout=0.4)
    reg = SessionRegistry(SessionStore(tmp_path, ops), settings)
    await reg.open()
    try:
        ids = [await reg.create(NewSession(agent="a")) for _ in range(3)]
        ops.also_slow = [tmp_path / sid for sid in ids]
        results = await asyncio.gather(
            *(reg.handle(s).add_user_message(content="x") for s in ids),
            return_exceptions=True,
        )
    finally:
        ops.also_slow = []
        await reg.aclose()
    assert all(isinstance(r, SessionTimeoutError) for r in results)
    # one ask holds the only slot (its fsync takes 2 s); the others time out waiting for it,
    # whichever order the loop happened to start them in
    assert sum("no session capacity" in str(r) for r in results) >= 1


async def test_the_adaptive_limit_lets_a_slow_disk_write_in_parallel(tmp_path: Path) -> None:
    ops = SlowFsyncOps(delay=0.02)
    reg = SessionRegistry(SessionStore(tmp_path, ops), RegistrySettings())  # adaptive
    await reg.open()
    try:
        ids = [await reg.create(NewSession(agent="a")) for _ in range(40)]
        ops.also_slow = [tmp_path / sid for sid in ids]
        ops.peak_in_fsync = 0

        async def chat(sid: str) -> None:
            for i in range(4):
                await reg.handle(sid).add_user_message(content=f"q{i}")
                await reg.handle(sid).add_assistant_response(content=f"a{i}")

        await asyncio.gather(*(chat(s) for s in ids))
        limit = reg.active_limit
    finally:
        ops.also_slow = []
        await reg.aclose()
    assert limit > 8
    assert ops.peak_in_fsync > 8


def test_serving_collects_garbage_less_often_and_undo_puts_everything_back() -> None:
    before = (gc.get_threshold(), sys.getswitchinterval(), gc.get_freeze_count())
    undo = tune_interpreter(pin_threads=False)
    try:
        assert gc.get_threshold() == GC_THRESHOLDS
        assert sys.getswitchinterval() == SWITCH_INTERVAL_SECONDS
        assert gc.get_freeze_count() > 0  # what start-up made is left out of the walks
    finally:
        undo()
    assert (gc.get_threshold(), sys.getswitchinterval(), gc.get_freeze_count()) == before
