"""The actor's durability and recovery rules, through the registry as callers use it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from duragent.core.messages import Role, ToolCall
from duragent.core.snapshot import SessionStatus
from duragent.session import (
    NewSession,
    RegistrySettings,
    SessionQuarantinedError,
    SessionRegistry,
)
from duragent.session.state import INTERRUPTED_RESULT
from duragent.store import SessionStore
from tests.store.failing_ops import FailingFileOps


def event_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
async def registry(tmp_path: Path) -> AsyncIterator[SessionRegistry]:
    reg = SessionRegistry(SessionStore(tmp_path), RegistrySettings(ask_timeout=10))
    await reg.open()
    yield reg
    await reg.aclose()


async def test_a_new_session_is_durable_before_create_returns(
    registry: SessionRegistry, tmp_path: Path
) -> None:
    sid = await registry.create(NewSession(agent="a", gateway="telegram", gateway_chat_id="9"))
    folder = tmp_path / sid
    assert (folder / "state.yaml").is_file()
    (start,) = event_lines(folder / "events.jsonl")
    assert start["type"] == "session_start"
    assert start["seq"] == 1
    assert start["gateway"] == "telegram"


async def test_a_user_message_is_on_disk_when_acknowledged(
    registry: SessionRegistry, tmp_path: Path
) -> None:
    sid = await registry.create(NewSession(agent="a"))
    result = await registry.handle(sid).add_user_message(content="hello", sender_id="u1")
    assert result.seq == 2
    last = event_lines(tmp_path / sid / "events.jsonl")[-1]
    assert last["type"] == "user_message"
    assert last["content"] == "hello"
    assert last["sender_id"] == "u1"


async def test_tool_results_are_batched_until_flush(
    registry: SessionRegistry, tmp_path: Path
) -> None:
    sid = await registry.create(NewSession(agent="a"))
    await registry.handle(sid).add_assistant_response(
        content="", tool_calls=(ToolCall(id="c", name="t"),)
    )
    await registry.handle(sid).add_tool_result(call_id="c", success=True, content="out")
    types = [e["type"] for e in event_lines(tmp_path / sid / "events.jsonl")]
    assert "tool_result" not in types
    await registry.handle(sid).flush()
    types = [e["type"] for e in event_lines(tmp_path / sid / "events.jsonl")]
    assert types[-2:] == ["assistant_response", "tool_result"]


async def test_a_restart_recovers_every_message_and_status(tmp_path: Path) -> None:
    reg = SessionRegistry(SessionStore(tmp_path))
    await reg.open()
    sid = await reg.create(NewSession(agent="a", on_disconnect="continue"))
    for i in range(130):
        await reg.handle(sid).add_user_message(content=f"q{i}")
        await reg.handle(sid).add_assistant_response(content=f"a{i}")
    await reg.handle(sid).set_status(SessionStatus.PAUSED)
    before = [m.text for m in await reg.handle(sid).messages()]
    await reg.aclose()

    again = SessionRegistry(SessionStore(tmp_path))
    await again.open()
    try:
        after = [m.text for m in await again.handle(sid).messages()]
        info = await again.info(sid)
    finally:
        await again.aclose()
    assert after == before
    assert info.status is SessionStatus.PAUSED
    assert info.last_seq == 1 + 260 + 1


async def test_an_interrupted_tool_call_gets_a_persisted_result(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    reg = SessionRegistry(store)
    await reg.open()
    sid = await reg.create(NewSession(agent="a"))
    await reg.handle(sid).add_user_message(content="run it")
    await reg.handle(sid).add_assistant_response(
        content="",
        tool_calls=(ToolCall(id="c1", name="bash"),),
        durable=True,
    )
    await reg.handle(sid).set_status(SessionStatus.RUNNING)
    await reg.aclose()  # as if the process died before the tool finished

    again = SessionRegistry(SessionStore(tmp_path))
    await again.open()
    try:
        messages = await again.handle(sid).messages()
        info = await again.info(sid)
    finally:
        await again.aclose()
    assert [m.role for m in messages][-2:] == [Role.ASSISTANT, Role.TOOL]
    assert messages[-1].text == INTERRUPTED_RESULT
    assert info.status is SessionStatus.PAUSED  # running + on_disconnect pause
    results = [
        e for e in event_lines(tmp_path / sid / "events.jsonl") if e["type"] == "tool_result"
    ]
    assert results[0]["result"] == {"success": False, "content": INTERRUPTED_RESULT}


async def test_a_corrupt_snapshot_quarantines_the_session_instead_of_emptying_it(
    tmp_path: Path,
) -> None:
    reg = SessionRegistry(SessionStore(tmp_path))
    await reg.open()
    sid = await reg.create(NewSession(agent="a"))
    await reg.handle(sid).add_user_message(content="precious")
    await reg.aclose()
    (tmp_path / sid / "state.yaml").write_text("session_id: [broken\n")

    again = SessionRegistry(SessionStore(tmp_path))
    await again.open()
    try:
        with pytest.raises(SessionQuarantinedError, match="quarantined"):
            await again.info(sid)
    finally:
        await again.aclose()
    kept = tmp_path / "_quarantine" / sid
    assert "precious" in (kept / "events.jsonl").read_text()
    assert "unreadable" in (kept / "REASON.txt").read_text()
    assert not (tmp_path / sid).exists()


async def test_a_redelivered_platform_message_is_not_added_twice(
    registry: SessionRegistry,
) -> None:
    sid = await registry.create(NewSession(agent="a"))
    first = await registry.handle(sid).add_user_message(content="hi", platform_message_id="tg:7")
    again = await registry.handle(sid).add_user_message(content="hi", platform_message_id="tg:7")
    assert not first.duplicate
    assert again.duplicate
    assert again.seq == first.seq
    assert not again.answered
    await registry.handle(sid).add_assistant_response(content="hello")
    third = await registry.handle(sid).add_user_message(content="hi", platform_message_id="tg:7")
    assert third.answered
    texts = [m.text for m in await registry.handle(sid).messages()]
    assert texts == ["hi", "hello"]


async def test_a_message_recorded_with_context_returns_what_a_turn_starts_from(
    registry: SessionRegistry,
) -> None:
    sid = await registry.create(NewSession(agent="a"))
    await registry.handle(sid).add_user_message(content="first")
    await registry.handle(sid).add_assistant_response(content="one")
    recorded = await registry.handle(sid).add_user_message(content="second", with_context=True)
    plain = await registry.handle(sid).add_user_message(content="third")
    assert recorded.agent == "a"
    assert recorded.pending_approval is None
    assert recorded.messages is not None
    assert [m.text for m in recorded.messages] == ["first", "one", "second"]
    assert plain.messages is None


async def test_a_redelivered_unanswered_message_still_brings_its_context(
    registry: SessionRegistry,
) -> None:
    sid = await registry.create(NewSession(agent="a"))
    session = registry.handle(sid)
    await session.add_user_message("hi", platform_message_id="tg:8", with_context=True)
    again = await session.add_user_message("hi", platform_message_id="tg:8", with_context=True)
    await session.add_assistant_response("hello")
    answered = await session.add_user_message("hi", platform_message_id="tg:8", with_context=True)
    assert again.duplicate
    assert not again.answered
    assert again.messages is not None
    assert [m.text for m in again.messages] == ["hi"]
    assert answered.duplicate
    assert answered.answered
    assert answered.messages is None


async def test_disk_full_loses_and_duplicates_nothing_once_writes_succeed(tmp_path: Path) -> None:
    ops = FailingFileOps(partial=13)
    reg = SessionRegistry(SessionStore(tmp_path, ops))
    await reg.open()
    sid = await reg.create(NewSession(agent="a"))
    await reg.handle(sid).add_user_message(content="before")
    ops.failing = True
    with pytest.raises(OSError, match="No space"):
        await reg.handle(sid).add_user_message(content="refused")
    calls = tuple(ToolCall(id=f"c{i}", name="t") for i in range(12))
    with pytest.raises(OSError):
        await reg.handle(sid).add_assistant_response(content="", tool_calls=calls, durable=True)
    ops.failing = False
    await reg.handle(sid).add_assistant_response(content="", tool_calls=calls, durable=True)
    ops.failing = True
    for i in range(12):  # batched: the 10th triggers a write that fails; all stay queued
        await reg.handle(sid).add_tool_result(call_id=f"c{i}", success=True, content=f"r{i}")
    ops.failing = False
    await reg.handle(sid).add_user_message(content="after")
    await reg.aclose()
    lines = event_lines(tmp_path / sid / "events.jsonl")
    seqs = [e["seq"] for e in lines]
    assert seqs == list(range(1, len(seqs) + 1))
    contents = [e.get("content") for e in lines if e["type"] == "user_message"]
    assert contents == ["before", "after"]
    results = [e["call_id"] for e in lines if e["type"] == "tool_result"]
    assert results == [f"c{i}" for i in range(12)]
    assert ops.failures >= 3


@pytest.mark.parametrize(("mode", "archived"), [("archive", True), ("discard", False)])
async def test_rollover_follows_the_session_mode(tmp_path: Path, mode: str, archived: bool) -> None:
    reg = SessionRegistry(SessionStore(tmp_path))
    await reg.open()
    sid = await reg.create(NewSession(agent="a", rollover=mode))
    for i in range(60):
        await reg.handle(sid).add_user_message(content=f"q{i}")
    await reg.handle(sid).snapshot()
    full = await reg.handle(sid).events(include_archive=True)
    await reg.aclose()
    live = event_lines(tmp_path / sid / "events.jsonl")
    assert live[0]["seq"] > 1  # compacted
    assert (tmp_path / sid / "events.archive.jsonl").exists() is archived
    if archived:
        assert [e.seq for e in full] == list(range(1, 62))


async def test_a_disabled_rollover_keeps_the_whole_log(tmp_path: Path) -> None:
    reg = SessionRegistry(SessionStore(tmp_path), RegistrySettings(default_rollover="disabled"))
    await reg.open()
    sid = await reg.create(NewSession(agent="a"))
    for i in range(60):
        await reg.handle(sid).add_user_message(content=f"q{i}")
    await reg.handle(sid).snapshot()
    await reg.aclose()
    assert event_lines(tmp_path / sid / "events.jsonl")[0]["seq"] == 1
