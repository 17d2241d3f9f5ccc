"""The typed handle: what callers pass and get back, and what lands on disk, is as before."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from duragent.core.events import EventType
from duragent.core.messages import ToolCall
from duragent.core.snapshot import SessionStatus
from duragent.session import (
    ApprovalDecision,
    NewSession,
    PendingApproval,
    RegistrySettings,
    SessionHandle,
    SessionRegistry,
)
from duragent.store import SessionStore

APPROVAL = PendingApproval(
    call_id="c1",
    tool_name="bash",
    arguments={"command": "rm -rf build"},
    command="rm -rf build",
    tool_type="bash",
)


def event_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[SessionHandle]:
    reg = SessionRegistry(SessionStore(tmp_path), RegistrySettings(ask_timeout=10))
    await reg.open()
    sid = await reg.create(NewSession(agent="a"))
    yield reg.handle(sid)
    await reg.aclose()


async def paused_on_approval(session: SessionHandle) -> None:
    await session.add_user_message("clean up")
    call = ToolCall(id="c1", name="bash", arguments='{"command": "rm -rf build"}')
    await session.add_assistant_response("", tool_calls=[call], durable=True)
    await session.set_pending_approval(APPROVAL)
    await session.set_status(SessionStatus.PAUSED)


async def test_a_status_goes_in_and_comes_back_as_the_enum(session: SessionHandle) -> None:
    assert await session.set_status(SessionStatus.PAUSED) is True
    assert await session.set_status(SessionStatus.PAUSED) is False
    assert (await session.info()).status is SessionStatus.PAUSED


async def test_a_pending_approval_comes_back_as_it_went_in(session: SessionHandle) -> None:
    await paused_on_approval(session)
    assert (await session.info()).pending_approval == APPROVAL
    context = await session.add_user_message("and?", with_context=True)
    assert context.pending_approval == APPROVAL


async def test_the_snapshot_keeps_the_approval_as_the_same_mapping(
    session: SessionHandle, tmp_path: Path
) -> None:
    await paused_on_approval(session)
    state = yaml.safe_load((tmp_path / session.session_id / "state.yaml").read_text())
    assert state["config"]["pending_approval"] == {
        "call_id": "c1",
        "tool_name": "bash",
        "arguments": {"command": "rm -rf build"},
        "command": "rm -rf build",
        "tool_type": "bash",
    }


async def test_a_decision_is_written_by_its_wire_name_and_clears_the_approval(
    session: SessionHandle, tmp_path: Path
) -> None:
    await paused_on_approval(session)
    seq = await session.record_decision("c1", ApprovalDecision.ALLOW_ALWAYS)
    last = event_lines(tmp_path / session.session_id / "events.jsonl")[-1]
    assert last["seq"] == seq
    assert last["type"] == EventType.APPROVAL_DECISION.value
    assert last["decision"] == "allow_always"
    assert (await session.info()).pending_approval is None


async def test_events_and_messages_read_what_was_recorded(session: SessionHandle) -> None:
    recorded = await session.add_user_message("hello", sender_id="u1")
    await session.add_assistant_response("hi there")
    events = await session.events(after_seq=recorded.seq - 1)
    assert [e.type for e in events] == [EventType.USER_MESSAGE, EventType.ASSISTANT_RESPONSE]
    assert [m.text for m in await session.messages()] == ["hello", "hi there"]
