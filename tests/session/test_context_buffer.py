"""The durable context buffer: group chatter kept as ``silent_message`` events, never history.

The reference keeps this buffer in memory and loses it on restart; here it is in the event log
and ``state.yaml``, so it survives a clean restart and a SIGKILL (events after the snapshot
are replayed onto the snapshot's ring without doubling it).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

from duragent.core.events import Event, EventType
from duragent.core.snapshot import SessionSnapshot
from duragent.session import NewSession, RegistrySettings, SessionRegistry, SessionState
from duragent.store import SessionStore

CHAT = NewSession(agent="bot", gateway="telegram", gateway_chat_id="-100", silent_cap=3)


async def open_registry(root: Path) -> SessionRegistry:
    registry = SessionRegistry(SessionStore(root), RegistrySettings(ask_timeout=10))
    await registry.open()
    return registry


async def test_chatter_is_kept_in_the_buffer_and_never_in_the_messages(tmp_path: Path) -> None:
    registry = await open_registry(tmp_path)
    try:
        sid = await registry.create(CHAT)
        session = registry.handle(sid)
        seq = await session.add_silent_message("Ann: lunch?", sender_id="1", sender_name="Ann")
        await session.add_silent_message("Bob: at noon", sender_id="2", sender_name="Bob")
        recent = await session.recent_silent(10, 24)
        messages = await session.messages()
        events = await session.events()
    finally:
        await registry.aclose()
    assert recent == ["Ann: lunch?", "Bob: at noon"]
    assert messages == []
    silent = [e for e in events if e.type == EventType.SILENT_MESSAGE]
    assert silent[0].seq == seq
    assert dict(silent[0].data) == {
        "content": "Ann: lunch?",
        "sender_id": "1",
        "sender_name": "Ann",
    }


async def test_the_buffer_keeps_only_the_newest_entries_up_to_its_cap(tmp_path: Path) -> None:
    registry = await open_registry(tmp_path)
    try:
        session = registry.handle(await registry.create(CHAT))
        for n in range(5):
            await session.add_silent_message(f"m{n}", sender_id="1")
        everything = await session.recent_silent(100, 24)
        newest_two = await session.recent_silent(2, 24)
    finally:
        await registry.aclose()
    assert everything == ["m2", "m3", "m4"]
    assert newest_two == ["m3", "m4"]


async def test_reading_the_buffer_does_not_empty_it(tmp_path: Path) -> None:
    registry = await open_registry(tmp_path)
    try:
        session = registry.handle(await registry.create(CHAT))
        await session.add_silent_message("Ann: hi", sender_id="1")
        first = await session.recent_silent(10, 24)
        second = await session.recent_silent(10, 24)
    finally:
        await registry.aclose()
    assert first == second == ["Ann: hi"]


async def test_a_redelivered_platform_message_is_buffered_once(tmp_path: Path) -> None:
    registry = await open_registry(tmp_path)
    try:
        session = registry.handle(await registry.create(CHAT))
        first = await session.add_silent_message("Ann: hi", sender_id="1", platform_message_id="7")
        again = await session.add_silent_message("Ann: hi", sender_id="1", platform_message_id="7")
        recent = await session.recent_silent(10, 24)
    finally:
        await registry.aclose()
    assert first is not None
    assert again is None
    assert recent == ["Ann: hi"]


async def test_the_buffer_survives_a_restart_without_doubling(tmp_path: Path) -> None:
    registry = await open_registry(tmp_path)
    try:
        sid = await registry.create(CHAT)
        session = registry.handle(sid)
        await session.add_silent_message("Ann: one", sender_id="1")
        await session.add_silent_message("Bob: two", sender_id="2")
    finally:
        await registry.aclose()  # snapshots the ring; replay starts before these events
    snapshot = (tmp_path / sid / "state.yaml").read_text()
    registry = await open_registry(tmp_path)
    try:
        recent = await registry.handle(sid).recent_silent(10, 24)
    finally:
        await registry.aclose()
    assert "Ann: one" in snapshot
    assert recent == ["Ann: one", "Bob: two"]


CRASHER = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from pathlib import Path
    from duragent.session import NewSession, RegistrySettings, SessionRegistry
    from duragent.store import SessionStore

    async def main() -> None:
        registry = SessionRegistry(SessionStore(Path(sys.argv[1])), RegistrySettings())
        await registry.open()
        sid = await registry.create(
            NewSession(agent="bot", gateway="telegram", gateway_chat_id="-100", silent_cap=3)
        )
        session = registry.handle(sid)
        for n in range(4):
            await session.add_silent_message(f"m{n}", sender_id="1", platform_message_id=str(n))
        print(sid, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    asyncio.run(main())
    """
)


def buffer_then_sigkill(root: Path) -> str:
    """Run ``CRASHER`` in a child killed with SIGKILL after four durable buffer writes."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", CRASHER, str(root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    return done.stdout.strip()


async def test_the_buffer_is_rebuilt_from_the_log_after_a_sigkill(tmp_path: Path) -> None:
    sid = await asyncio.to_thread(buffer_then_sigkill, tmp_path)
    snapshot = (tmp_path / sid / "state.yaml").read_text()
    assert "m1" not in snapshot  # the kill came before any snapshot held the chatter
    registry = await open_registry(tmp_path)
    try:
        session = registry.handle(sid)
        recent = await session.recent_silent(10, 24)
        redelivered = await session.add_silent_message("m3", sender_id="1", platform_message_id="3")
    finally:
        await registry.aclose()
    assert recent == ["m1", "m2", "m3"]
    assert redelivered is None


def _silent(seq: int, content: str, at: datetime) -> Event:
    stamp = at.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return Event(seq, stamp, EventType.SILENT_MESSAGE.value, {"content": content, "sender_id": "1"})


def test_entries_older_than_the_age_limit_are_left_out() -> None:
    now = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
    state = SessionState(SessionSnapshot(session_id="s", agent="a", created_at="x", updated_at="x"))
    state.apply(_silent(2, "old", now - timedelta(hours=30)))
    state.apply(_silent(3, "recent", now - timedelta(hours=2)))
    assert state.recent_silent(10, timedelta(hours=24), now) == ["recent"]
    assert state.recent_silent(10, timedelta(hours=48), now) == ["old", "recent"]


def test_a_replayed_event_the_snapshot_already_holds_is_not_added_again() -> None:
    now = datetime.now(UTC)
    state = SessionState(SessionSnapshot(session_id="s", agent="a", created_at="x", updated_at="x"))
    state.apply(_silent(2, "one", now))
    restored = SessionState(SessionSnapshot.from_dict(state.to_snapshot("x").to_dict()))
    restored.apply(_silent(2, "one", now))  # replayed from checkpoint_seq
    restored.apply(_silent(3, "two", now))
    assert restored.recent_silent(10, timedelta(hours=1), now) == ["one", "two"]


def test_a_snapshot_without_a_buffer_reads_as_an_empty_one() -> None:
    old = {"schema_version": 3, "session_id": "s", "agent": "a", "created_at": "x"}
    snapshot = SessionSnapshot.from_dict(json.loads(json.dumps(old)))
    assert snapshot.silent_buffer == []
    assert snapshot.silent_buffer_cap == 200
