"""Out of descriptors, the registry makes room instead of failing: idle actors are evicted
(least recently used first), the cap is lowered, and nothing is recorded twice or lost."""

from __future__ import annotations

import asyncio
import errno
import logging
import threading
from pathlib import Path

import pytest

from duragent.core.messages import ToolCall
from duragent.errors import StorageError
from duragent.session import NewSession, RegistrySettings, SessionRegistry
from duragent.session.descriptors import is_out_of_descriptors
from duragent.session.operations import SessionOps
from duragent.session.state import INTERRUPTED_RESULT
from duragent.store import SessionStore
from duragent.store.fileops import OS_FILE_OPS, OsFileOps
from duragent.store.snapshot_file import SnapshotFile


class ScarceDescriptorOps(OsFileOps):
    """Real file operations, but at most ``limit`` event logs open at once (then EMFILE)."""

    sync_appends = False

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open = 0
        self.refused = 0
        self._lock = threading.Lock()
        self._logs: set[int] = set()

    def open_append(self, path: Path, *, sync: bool = False) -> int:
        with self._lock:
            if self.open >= self.limit:
                self.refused += 1
                raise OSError(errno.EMFILE, "Too many open files")
            self.open += 1
        fd = OS_FILE_OPS.open_append(path)
        with self._lock:
            self._logs.add(fd)
        return fd

    def close(self, fd: int) -> None:
        with self._lock:
            if fd in self._logs:  # temporary files of atomic writes are not counted
                self._logs.discard(fd)
                self.open -= 1
        OS_FILE_OPS.close(fd)

    def write(self, fd: int, data: bytes) -> int:
        return OS_FILE_OPS.write(fd, data)

    def fsync(self, fd: int) -> None:
        OS_FILE_OPS.fsync(fd)

    def read_bytes(self, path: Path) -> bytes:
        return OS_FILE_OPS.read_bytes(path)

    def truncate(self, fd: int, size: int) -> None:
        OS_FILE_OPS.truncate(fd, size)

    def size(self, fd: int) -> int:
        return OS_FILE_OPS.size(fd)


async def open_registry(tmp_path: Path, ops: ScarceDescriptorOps) -> SessionRegistry:
    reg = SessionRegistry(
        SessionStore(tmp_path, ops),
        RegistrySettings(max_live=1000, min_idle_to_evict=0.0),
    )
    await reg.open()
    return reg


async def test_running_out_of_descriptors_evicts_idle_actors_instead_of_failing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ops = ScarceDescriptorOps(limit=6)
    reg = await open_registry(tmp_path, ops)
    try:
        ids = []
        for n in range(30):
            sid = await reg.create(NewSession(agent="bot"))
            await reg.handle(sid).add_user_message(content=f"hello {n}")
            ids.append(sid)
        assert ops.refused > 0  # the pressure was real
        assert reg.live_cap < 1000
        assert "out of open files" in caplog.text
        for n, sid in enumerate(ids):  # every message once, evicted sessions restart
            texts = [m.content for m in await reg.handle(sid).messages() if m.role == "user"]
            assert texts == [f"hello {n}"]
    finally:
        await reg.aclose()


async def test_a_cap_lowered_for_descriptors_holds_even_for_recently_used_actors(
    tmp_path: Path,
) -> None:
    reg = SessionRegistry(SessionStore(tmp_path), RegistrySettings(min_idle_to_evict=60.0))
    await reg.open()
    try:
        reg.live_cap = 4  # what the runtime does when the open-file limit is low
        ids = [await reg.create(NewSession(agent="bot")) for _ in range(12)]
        for sid in ids:
            await reg.handle(sid).add_user_message(content="hi")
        for _ in range(6_000):
            if reg.live_count <= 4:
                break
            await asyncio.sleep(0.02)
        assert reg.live_count <= 4
    finally:
        await reg.aclose()


async def test_an_actor_waiting_for_a_tool_result_is_not_evicted(tmp_path: Path) -> None:
    ops = ScarceDescriptorOps(limit=3)
    reg = await open_registry(tmp_path, ops)
    try:
        busy = await reg.create(NewSession(agent="bot"))
        await reg.handle(busy).add_user_message(content="run it")
        call = ToolCall(id="call_1", name="bash", arguments='{"command": "sleep 1"}')
        await reg.handle(busy).add_assistant_response(content="", tool_calls=[call])
        for n in range(10):
            sid = await reg.create(NewSession(agent="bot"))
            await reg.handle(sid).add_user_message(content=f"hello {n}")
        assert reg.is_live(busy)
        await reg.handle(busy).add_tool_result(call_id="call_1", success=True, content="done")
        await reg.handle(busy).flush()
        results = [
            e.data["result"]["content"]
            for e in await reg.handle(busy).events()
            if e.type == "tool_result"
        ]
        assert results == ["done"]
        assert INTERRUPTED_RESULT not in results
    finally:
        await reg.aclose()


async def test_a_snapshot_unreadable_for_want_of_descriptors_is_not_quarantined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    reg = await open_registry(tmp_path, ScarceDescriptorOps(limit=100))
    sid = await reg.create(NewSession(agent="bot"))
    await reg.handle(sid).add_user_message(content="keep me")
    await reg.aclose()
    real_read = Path.read_text
    starved = {"left": 2}

    def read_text(self: Path, *args: object, **kwargs: object) -> str:
        if self.name == "state.yaml" and starved["left"]:
            starved["left"] -= 1
            raise OSError(errno.EMFILE, "Too many open files")
        return real_read(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", read_text)
    reg = await open_registry(tmp_path, ScarceDescriptorOps(limit=100))
    try:
        caplog.set_level(logging.ERROR)
        messages = await reg.handle(sid).messages()
        assert [m.content for m in messages if m.role == "user"] == ["keep me"]
        assert reg.store.quarantined() == []
        assert isinstance(SnapshotFile(tmp_path / sid).read(), object)
    finally:
        await reg.aclose()


async def test_an_op_not_declared_retry_safe_fails_out_of_descriptors_and_a_safe_one_is_retried(
    tmp_path: Path,
) -> None:
    ops = ScarceDescriptorOps(limit=2)
    reg = await open_registry(tmp_path, ops)
    try:
        sid = await reg.create(NewSession(agent="bot"))
        await reg.stop(sid)  # its log is closed: its next write needs a descriptor
        idle = [await reg.create(NewSession(agent="bot")) for _ in range(2)]  # logs open
        session = reg.handle(sid)

        assert not SessionOps.pin.retry_safe
        with pytest.raises(StorageError) as refused:
            await session.pin("keep this")
        assert is_out_of_descriptors(refused.value)
        assert all(reg.is_live(s) for s in idle)  # nothing was evicted to try it again

        assert SessionOps.add_user_message.retry_safe
        await session.add_user_message("hello")  # tried again once idle actors made room
        assert not all(reg.is_live(s) for s in idle)
        await session.pin("keep this")
        assert [p.text for p in (await session.memory()).pins] == ["keep this"]
        assert [m.content for m in await session.messages() if m.role == "user"] == ["hello"]
    finally:
        await reg.aclose()
