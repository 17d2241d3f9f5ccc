"""The typed handle: what callers pass and get back, and what lands on disk, is as before."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from duragent.core.events import Event, EventType
from duragent.core.messages import ToolCall
from duragent.core.snapshot import SessionSnapshot, SessionStatus
from duragent.session import (
    ApprovalDecision,
    NewSession,
    PendingApproval,
    RegistrySettings,
    SessionHandle,
    SessionRegistry,
)
from duragent.session.state import SessionState
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


async def test_an_approval_rebuilt_from_the_log_alone_still_names_its_tool(
    session: SessionHandle, tmp_path: Path
) -> None:
    """A crash between the ``approval_required`` fsync and the snapshot leaves only the log.

    The approval rebuilt from it must still run once approved (it used to come back without
    a tool name: "Tool 'None' is no longer available").
    """
    await paused_on_approval(session)
    lines = (tmp_path / session.session_id / "events.jsonl").read_text().splitlines()
    state = SessionState(SessionSnapshot(session_id="s", agent="a", created_at="t", updated_at="t"))
    for line in lines:
        state.apply(Event.from_json(line))
    assert PendingApproval.from_dict(state.pending_approval or {}) == APPROVAL


def test_an_approval_event_written_before_it_held_the_tool_takes_it_from_the_call() -> None:
    state = SessionState(SessionSnapshot(session_id="s", agent="a", created_at="t", updated_at="t"))
    call = ToolCall(id="c1", name="bash", arguments='{"command": "rm -rf build"}')
    state.apply(Event.assistant_response(1, agent="a", content="", tool_calls=(call,)))
    old_form = {"call_id": "c1", "command": "rm -rf build"}
    state.apply(Event.make(2, EventType.APPROVAL_REQUIRED, **old_form))
    assert PendingApproval.from_dict(state.pending_approval or {}) == APPROVAL
