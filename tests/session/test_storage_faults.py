"""A disk refusing a read or write is a StorageError, never corruption; quarantine is visible."""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path
from typing import Any

import pykka
import pytest

from duragent.core.events import EventType
from duragent.core.messages import Message, Role
from duragent.errors import StorageError
from duragent.session import NewSession, RegistrySettings, SessionQuarantinedError, SessionRegistry
from duragent.store import SessionStore
from duragent.testing import Reply, ToolCallReply
from tests.polling import eventually
from tests.store.failing_ops import FailingFileOps
from tests.turns.turn_fixtures import FnTool, harness


async def _stopped_session(root: Path, count: int) -> str:
    reg = SessionRegistry(SessionStore(root), RegistrySettings(ask_timeout=10))
    await reg.open()
    try:
        sid = await reg.create(NewSession(agent="a"))
        for i in range(count):
            await reg.handle(sid).add_user_message(content=f"m{i}")
    finally:
        await reg.aclose()
    return sid


def _user_texts(messages: list[Message]) -> list[str]:
    return [m.text for m in messages if m.role is Role.USER]


@pytest.mark.parametrize("name", ["state.yaml", "events.jsonl"])
@pytest.mark.parametrize("code", [errno.EACCES, errno.EIO, errno.EMFILE])
async def test_an_unreadable_file_is_a_storage_error_and_the_session_loads_once_it_is_readable(
    tmp_path: Path, name: str, code: int
) -> None:
    sid = await _stopped_session(tmp_path, 3)
    ops = FailingFileOps()
    ops.unreadable[name] = code
    reg = SessionRegistry(SessionStore(tmp_path, ops), RegistrySettings(ask_timeout=10))
    await reg.open()
    try:
        for _ in range(2):  # refused every time, never poisoned, never quarantined
            with pytest.raises(StorageError) as caught:
                await reg.info(sid)
            assert caught.value.errno == code
            assert name in str(caught.value)
            assert (tmp_path / sid / "state.yaml").is_file()
        assert reg.store.quarantined() == []
        ops.unreadable.clear()  # the operator fixed the mode / the disk / the limit
        messages = await reg.handle(sid).messages()
        assert _user_texts(messages) == ["m0", "m1", "m2"]
    finally:
        await reg.aclose()


async def test_an_actor_that_failed_to_load_does_not_stay_running(tmp_path: Path) -> None:
    sid = await _stopped_session(tmp_path, 1)
    ops = FailingFileOps()
    ops.unreadable["state.yaml"] = errno.EACCES
    reg = SessionRegistry(SessionStore(tmp_path, ops), RegistrySettings(ask_timeout=10))
    await reg.open()
    before = len(pykka.ActorRegistry.get_all())
    try:
        for _ in range(3):
            with pytest.raises(StorageError):
                await reg.info(sid)
        for _ in range(6_000):  # the failed actors stop on their own threads
            if len(pykka.ActorRegistry.get_all()) <= before:
                break
            await asyncio.sleep(0.02)
        assert len(pykka.ActorRegistry.get_all()) <= before
        assert reg.live_count == 0
    finally:
        await reg.aclose()


async def test_a_full_disk_refuses_the_message_and_memory_stays_equal_to_disk(
    tmp_path: Path,
) -> None:
    ops = FailingFileOps(partial=9)
    reg = SessionRegistry(SessionStore(tmp_path, ops), RegistrySettings(ask_timeout=10))
    await reg.open()
    try:
        sid = await reg.create(NewSession(agent="a"))
        await reg.handle(sid).add_user_message(content="kept")
        log = tmp_path / sid / "events.jsonl"
        before = log.read_bytes()
        ops.failing = True
        with pytest.raises(StorageError, match="No space left on device") as caught:
            await reg.handle(sid).add_user_message(content="refused")
        assert "events.jsonl" in str(caught.value)
        assert log.read_bytes() == before  # no half line left behind
        assert _user_texts(await reg.handle(sid).messages()) == ["kept"]
        assert reg.store.health.failure is not None
        assert reg.store.health.check(min_interval=0) is not None  # the probe fails too
        ops.failing = False  # space freed
        assert reg.store.health.check(min_interval=0) is None
        await reg.handle(sid).add_user_message(content="refused")  # the retry works
        assert _user_texts(await reg.handle(sid).messages()) == ["kept", "refused"]
    finally:
        await reg.aclose()


async def test_a_quarantined_session_is_refused_every_time_and_listed_with_its_reason(
    tmp_path: Path,
) -> None:
    sid = await _stopped_session(tmp_path, 2)
    (tmp_path / sid / "state.yaml").write_text("session_id: [broken\n")
    reg = SessionRegistry(SessionStore(tmp_path), RegistrySettings(ask_timeout=10))
    await reg.open()
    try:
        for _ in range(3):
            with pytest.raises(SessionQuarantinedError, match="unreadable") as caught:
                await reg.handle(sid).messages()
            assert caught.value.session_id == sid
        with pytest.raises(SessionQuarantinedError):
            await reg.delete(sid)
        (entry,) = await reg.list_sessions()
        assert entry["session_id"] == sid
        assert entry["status"] == "quarantined"
        assert "unreadable" in entry["reason"]
        assert await reg.expire(lambda _agent: 0.000001) == []
    finally:
        await reg.aclose()


async def test_a_restored_session_loads_again_and_a_still_bad_one_is_quarantined_again(
    tmp_path: Path,
) -> None:
    sid = await _stopped_session(tmp_path, 2)
    good = (tmp_path / sid / "state.yaml").read_text()
    (tmp_path / sid / "state.yaml").write_text("session_id: [broken\n")
    reg = SessionRegistry(SessionStore(tmp_path), RegistrySettings(ask_timeout=10))
    await reg.open()
    try:
        with pytest.raises(SessionQuarantinedError):
            await reg.info(sid)
        reg.store.restore(sid)  # restored without a fix: the next use re-checks it
        with pytest.raises(SessionQuarantinedError, match="unreadable"):
            await reg.info(sid)
        (tmp_path / "_quarantine" / sid / "state.yaml").write_text(good)  # the fix
        reg.store.restore(sid)
        assert _user_texts(await reg.handle(sid).messages()) == ["m0", "m1"]
        assert reg.store.quarantined() == []
    finally:
        await reg.aclose()


async def test_a_session_the_disk_refuses_to_create_leaves_nothing_behind(tmp_path: Path) -> None:
    ops = FailingFileOps()
    reg = SessionRegistry(SessionStore(tmp_path, ops), RegistrySettings(ask_timeout=10))
    await reg.open()
    try:
        ops.failing = True
        with pytest.raises(StorageError, match="No space left"):
            await reg.create(NewSession(agent="a", gateway="telegram", gateway_chat_id="1"))
        assert reg.store.list_ids() == []
        assert reg.store.chats.items() == []
        ops.failing = False
        sid = await reg.create(NewSession(agent="a", gateway="telegram", gateway_chat_id="1"))
        assert reg.store.list_ids() == [sid]
    finally:
        await reg.aclose()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
async def test_a_snapshot_without_read_permission_is_not_quarantined(tmp_path: Path) -> None:
    sid = await _stopped_session(tmp_path, 1)
    state = tmp_path / sid / "state.yaml"
    state.chmod(0)
    reg = SessionRegistry(SessionStore(tmp_path), RegistrySettings(ask_timeout=10))
    await reg.open()
    try:
        with pytest.raises(StorageError, match="Permission denied"):
            await reg.info(sid)
        state.chmod(0o644)
        assert _user_texts(await reg.handle(sid).messages()) == ["m0"]
    finally:
        await reg.aclose()


async def test_running_out_of_descriptors_refuses_the_write_and_the_next_one_works(
    tmp_path: Path,
) -> None:
    sid = await _stopped_session(tmp_path, 1)
    ops = FailingFileOps()
    reg = SessionRegistry(SessionStore(tmp_path, ops), RegistrySettings(ask_timeout=10))
    await reg.open()
    try:
        ops.open_errno = errno.EMFILE
        with pytest.raises(StorageError, match="Too many open files") as caught:
            await reg.handle(sid).add_user_message(content="m1")
        assert "events.jsonl" in str(caught.value)
        health = reg.store.health
        assert health.failure is not None
        ops.open_errno = None
        await reg.handle(sid).add_user_message(content="m1")
        assert reg.store.health.failure is None
        assert _user_texts(await reg.handle(sid).messages()) == ["m0", "m1"]
    finally:
        await reg.aclose()


async def test_each_message_of_a_turn_the_disk_cut_short_is_told_its_own_recorded_seq(
    tmp_path: Path,
) -> None:
    gate, started = asyncio.Event(), asyncio.Event()

    async def slow(args: Any) -> str:
        started.set()
        await gate.wait()
        return "slow done"

    async with harness(tmp_path, tools=[FnTool("slow", slow)]) as h:
        ops = FailingFileOps()
        assert isinstance(h.registry.store, SessionStore)
        h.registry.store.ops = ops
        h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="slow", arguments={}, id="a")]),
            Reply(text="never written"),
        )
        sid = await h.runner.start_session("bot")
        first = asyncio.create_task(h.runner.run(sid, "start"))
        await started.wait()  # steered at the tool boundary: any earlier would skip the tool
        second = asyncio.create_task(h.runner.run(sid, "and also this"))
        assert await eventually(lambda: "and also this" in h.runner._lines.steered(sid))
        ops.failing = True  # the disk fills before the turn's reply is written
        gate.set()
        outcomes = await asyncio.gather(first, second, return_exceptions=True)
        ops.failing = False
        events = await h.registry.handle(sid).events()
    seqs = {e.data["content"]: e.seq for e in events if e.type == EventType.USER_MESSAGE}
    assert set(seqs) == {"start", "and also this"}  # each recorded once
    for outcome, content in zip(outcomes, ("start", "and also this"), strict=True):
        assert isinstance(outcome, StorageError), outcome
        assert outcome.recorded_seq == seqs[content]
        assert "do not send it again" in str(outcome)
    assert not any(
        e.type == EventType.ASSISTANT_RESPONSE and not e.data.get("tool_calls") for e in events
    )
