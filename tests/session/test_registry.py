"""Concurrency, bounds and lifecycle of live session actors."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from duragent.session import (
    NewSession,
    RegistrySettings,
    SessionNotFoundError,
    SessionRegistry,
    SessionTimeoutError,
    SessionUnavailableError,
)
from duragent.session.bridge import ask
from duragent.session.operations import SessionOps
from duragent.store import SessionStore
from tests.conftest import Calendar
from tests.polling import eventually
from tests.session.slow_ops import SlowFsyncOps


async def open_registry(tmp_path: Path, **settings: float) -> SessionRegistry:
    reg = SessionRegistry(SessionStore(tmp_path), RegistrySettings(**settings))  # type: ignore[arg-type]
    await reg.open()
    return reg


async def test_fifty_concurrent_first_messages_for_one_chat_create_one_session(
    tmp_path: Path,
) -> None:
    reg = await open_registry(tmp_path)
    new = NewSession(agent="a", gateway="telegram", gateway_chat_id="42")
    try:
        ids = await asyncio.gather(*(reg.for_chat(("telegram", "42", "a"), new) for _ in range(50)))
    finally:
        await reg.aclose()
    assert len(set(ids)) == 1
    assert reg.store.list_ids() == [ids[0]]
    assert len(reg._chat_locks) == 0  # the chat's lock is not kept once resolved
    fresh = SessionStore(tmp_path)
    fresh.open()
    assert fresh.chats.get(("telegram", "42", "a")) == ids[0]


async def test_a_completed_chat_session_is_replaced_by_a_new_one(tmp_path: Path) -> None:
    reg = await open_registry(tmp_path)
    key = ("discord", "7", "a")
    new = NewSession(agent="a", gateway="discord", gateway_chat_id="7")
    try:
        first = await reg.for_chat(key, new)
        await reg.complete(first)
        second = await reg.for_chat(key, new)
    finally:
        await reg.aclose()
    assert first != second
    assert sorted(reg.store.list_ids()) == sorted([first, second])


async def test_messages_to_one_session_keep_their_order(tmp_path: Path) -> None:
    reg = await open_registry(tmp_path)
    try:
        sid = await reg.create(NewSession(agent="a"))
        results = await asyncio.gather(
            *(reg.handle(sid).add_user_message(content=f"m{i}") for i in range(100))
        )
        texts = [m.text for m in await reg.handle(sid).messages()]
    finally:
        await reg.aclose()
    assert [r.seq for r in results] == list(range(2, 102))
    assert texts == [f"m{i}" for i in range(100)]


async def test_a_slow_session_never_delays_another(tmp_path: Path) -> None:
    """The slow session's fsync is held until the other session's write is done."""
    ops = SlowFsyncOps(held=threading.Event())
    reg = SessionRegistry(SessionStore(tmp_path, ops))
    await reg.open()
    try:
        slow = await reg.create(NewSession(agent="a"))
        fast = await reg.create(NewSession(agent="a"))
        ops.slow_dir = tmp_path / slow
        slow_task = asyncio.create_task(reg.handle(slow).add_user_message(content="x"))
        assert await eventually(lambda: ops.in_fsync == 1)  # the slow actor is in its fsync
        written = await asyncio.wait_for(reg.handle(fast).add_user_message(content="x"), 60)
        slow_was_waiting = not slow_task.done()
        assert ops.held is not None
        ops.held.set()
        await slow_task
    finally:
        assert ops.held is not None
        ops.held.set()
        await reg.aclose()
    assert written.seq == 2
    assert slow_was_waiting


async def test_live_actors_are_bounded_and_evicted_ones_restart_from_disk(tmp_path: Path) -> None:
    reg = await open_registry(tmp_path, max_live=5, min_idle_to_evict=0)
    try:
        ids = [await reg.create(NewSession(agent="a")) for _ in range(12)]
        assert await eventually(lambda: reg.live_count <= 5)  # evictions run as tasks
        await reg.handle(ids[0]).add_user_message(content="still here")
        texts = [m.text for m in await reg.handle(ids[0]).messages()]
    finally:
        await reg.aclose()
    assert texts == ["still here"]


async def test_idle_actors_are_stopped_and_restarted_on_the_next_message(tmp_path: Path) -> None:
    reg = await open_registry(tmp_path, idle_seconds=0.2)
    try:
        sid = await reg.create(NewSession(agent="a"))
        await reg.handle(sid).add_user_message(content="one")
        assert await eventually(lambda: not reg.is_live(sid))  # the reaper's pass
        await reg.handle(sid).add_user_message(content="two")
        assert reg.is_live(sid)
        texts = [m.text for m in await reg.handle(sid).messages()]
    finally:
        await reg.aclose()
    assert texts == ["one", "two"]


async def test_an_ask_to_a_stopped_actor_fails_at_once(tmp_path: Path) -> None:
    reg = await open_registry(tmp_path)
    try:
        sid = await reg.create(NewSession(agent="a"))
        ref = reg._live[sid].ref
        await reg.stop(sid)
        with pytest.raises(SessionUnavailableError):
            await ask(ref, 5, SessionOps.info)
    finally:
        await reg.aclose()


async def test_every_ask_has_a_timeout(tmp_path: Path) -> None:
    ops = SlowFsyncOps(delay=1.0)
    reg = SessionRegistry(SessionStore(tmp_path, ops), RegistrySettings(ask_timeout=0.2))
    await reg.open()
    try:
        sid = await reg.create(NewSession(agent="a"))
        ops.slow_dir = tmp_path / sid
        with pytest.raises(SessionTimeoutError, match=r"within 0\.2s"):
            await reg.handle(sid).add_user_message(content="x")
    finally:
        ops.slow_dir = None
        await reg.aclose()


async def test_an_unknown_session_is_not_found(tmp_path: Path) -> None:
    reg = await open_registry(tmp_path)
    try:
        with pytest.raises(SessionNotFoundError, match="session 'session_nope' not found"):
            await reg.info("session_nope")
        with pytest.raises(SessionNotFoundError):
            await reg.delete("session_nope")
    finally:
        await reg.aclose()


async def test_delete_removes_the_session_and_its_chat(tmp_path: Path) -> None:
    reg = await open_registry(tmp_path)
    try:
        sid = await reg.for_chat(
            ("http", "c", "a"), NewSession(agent="a", gateway="http", gateway_chat_id="c")
        )
        await reg.delete(sid)
        assert not (tmp_path / sid).exists()
        assert reg.store.chats.get(("http", "c", "a")) is None
        with pytest.raises(SessionNotFoundError):
            await reg.info(sid)
    finally:
        await reg.aclose()


async def test_opening_thousands_of_sessions_reads_none_of_them(tmp_path: Path) -> None:
    # 3,000 sessions whose snapshots would all fail to load: opening the registry and serving
    # a new chat must not touch them (recovery is lazy).
    for i in range(3000):
        folder = tmp_path / f"session_{i:05d}"
        folder.mkdir()
        (folder / "state.yaml").write_text("broken: [\n")
    reg = await open_registry(tmp_path)
    try:
        sid = await reg.for_chat(
            ("t", "1", "a"), NewSession(agent="a", gateway="t", gateway_chat_id="1")
        )
        await reg.handle(sid).add_user_message(content="first message")
    finally:
        await reg.aclose()
    assert reg.store.quarantined() == []


async def test_idleness_is_measured_on_the_process_calendar_not_the_wall_clock(
    tmp_path: Path, calendar: Calendar
) -> None:
    """A session's ``updated_at`` and the sweep's "now" come from one calendar: a simulated
    week without a word expires a session under the default TTL (168 h), five days do not,
    across a restart."""
    reg = await open_registry(tmp_path)
    try:
        quiet = await reg.create(NewSession(agent="a"))
        calendar.advance(days=2)
        recent = await reg.create(NewSession(agent="a"))
        calendar.advance(days=5, seconds=60)
        await reg.aclose()  # a restart does not make a session less idle
        reg = await open_registry(tmp_path)
        expired = await reg.expire(lambda _agent: 168)
        statuses = {s["session_id"]: s["status"] for s in await reg.list_sessions()}
    finally:
        await reg.aclose()
    assert expired == [quiet]
    assert statuses == {quiet: "completed", recent: "active"}


async def test_a_session_active_after_its_last_snapshot_is_not_expired_after_a_crash(
    tmp_path: Path, calendar: Calendar
) -> None:
    """After a crash a session not yet loaded is listed from its snapshot, which can be days
    older than its log; its replayed state, not the snapshot, says how long it has been idle."""
    reg = await open_registry(tmp_path)
    sid = await reg.create(NewSession(agent="a"))
    await reg.handle(sid).add_user_message(content="day 0")
    await reg.handle(sid).add_assistant_response(content="noted")
    stale = (tmp_path / sid / "state.yaml").read_bytes()  # the snapshot a crash leaves
    calendar.advance(days=6)
    await reg.handle(sid).add_user_message(content="day 6")
    await reg.handle(sid).add_assistant_response(content="noted again")
    await reg.aclose()
    (tmp_path / sid / "state.yaml").write_bytes(stale)
    calendar.advance(days=2)  # 8 days after the snapshot, 2 after the last message
    reg = await open_registry(tmp_path)
    try:
        expired = await reg.expire(lambda _agent: 168)
        status = (await reg.info(sid)).status.value
    finally:
        await reg.aclose()
    assert expired == []
    assert status == "active"


async def test_a_message_still_owed_its_answer_keeps_its_session_one_more_ttl(
    tmp_path: Path, calendar: Calendar
) -> None:
    """A message accepted and not yet answered (its turn queued behind a long outage's
    recovery, or still running) keeps the session past its TTL: ending it would lose the
    message. A turn nobody runs any more must not keep it forever: one more TTL, then it
    ends. An answered session ends after one TTL."""
    reg = await open_registry(tmp_path)
    try:
        owed = await reg.create(NewSession(agent="a"))
        await reg.handle(owed).add_user_message(content="are you there?")
        answered = await reg.create(NewSession(agent="a"))
        await reg.handle(answered).add_user_message(content="hello")
        await reg.handle(answered).add_assistant_response(content="hi")
        calendar.advance(days=9)
        after_nine_days = await reg.expire(lambda _agent: 168)
        calendar.advance(days=6)
        after_fifteen_days = await reg.expire(lambda _agent: 168)
    finally:
        await reg.aclose()
    assert after_nine_days == [answered]
    assert after_fifteen_days == [owed]


async def test_sessions_idle_past_their_ttl_are_completed_and_zero_disables(
    tmp_path: Path,
) -> None:
    reg = await open_registry(tmp_path)
    try:
        expiring = await reg.for_chat(
            ("t", "1", "short"), NewSession(agent="short", gateway="t", gateway_chat_id="1")
        )
        kept = await reg.create(NewSession(agent="forever"))
        await asyncio.sleep(0.05)
        ttl = {"short": 1e-6, "forever": 0}  # hours; 0 = never expire
        expired = await reg.expire(lambda agent: ttl[agent])
        statuses = {s["session_id"]: s["status"] for s in await reg.list_sessions()}
    finally:
        await reg.aclose()
    assert expired == [expiring]
    assert statuses == {expiring: "completed", kept: "active"}
    assert reg.store.chats.get(("t", "1", "short")) is None
    assert (tmp_path / expiring / "events.jsonl").exists()  # files are kept
