"""A paused turn goes on from its own person's message, not from what others wrote meanwhile.

Person 7 asks (message A), the model calls ``c1``, which waits for approval; person 8 writes
(message B) before it is decided. The continuation's (history, turn) must end the history
at A and leave B out of the turn, live and after a reload from disk, where "the last user
message in the window" (what was used before) would be B.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import yaml

from duragent.core.events import Event, EventType
from duragent.core.messages import Message, ToolCall, is_steering
from duragent.core.snapshot import SessionStatus
from duragent.session import (
    NewSession,
    PendingApproval,
    RegistrySettings,
    SessionHandle,
    SessionRegistry,
)
from duragent.session.state import CHECKPOINT_THRESHOLD
from duragent.store import SessionStore

CALL = ToolCall(id="c1", name="bash", arguments='{"command": "echo hi"}')
A = "user: please run echo hi"
B = "user: is anyone there?"
THE_CALL = "assistant calls c1"
ITS_RESULT = "result of c1: hi"


def shown(messages: list[Message]) -> list[str]:
    """Each message as one line: who wrote it and what (a call's id, a result's call)."""
    lines = []
    for m in messages:
        if m.tool_calls:
            lines.append("assistant calls " + ", ".join(c.id for c in m.tool_calls))
        elif m.tool_call_id:
            lines.append(f"result of {m.tool_call_id}: {m.text}")
        elif is_steering(m):
            lines.append("steering")
        else:
            lines.append(f"{m.role.value}: {m.text}")
    return lines


@asynccontextmanager
async def registry_over(folder: Path) -> AsyncIterator[SessionRegistry]:
    registry = SessionRegistry(SessionStore(folder), RegistrySettings(ask_timeout=10))
    await registry.open()
    try:
        yield registry
    finally:
        await registry.aclose()


async def paused_while_another_wrote(
    session: SessionHandle, *, keep_turn_seq: bool = True, earlier: int = 0
) -> int:
    """A, the call ``c1`` waiting for approval, then B from someone else; A's seq."""
    for i in range(earlier):
        await session.add_user_message(f"earlier {i}", sender_id="7")
    asked = await session.add_user_message(A.removeprefix("user: "), sender_id="7")
    await session.add_assistant_response("", tool_calls=[CALL], durable=True)
    approval = PendingApproval(
        call_id="c1",
        command="echo hi",
        tool_name="bash",
        requester_id="7",
        turn_seq=asked.seq if keep_turn_seq else None,
    )
    await session.set_pending_approval(approval)
    await session.set_status(SessionStatus.PAUSED)
    await session.add_user_message(B.removeprefix("user: "), sender_id="8")
    return asked.seq


async def split(session: SessionHandle, turn_seq: int | None) -> tuple[list[str], list[str]]:
    history, turn = await session.paused_turn("c1", turn_seq)
    return shown(history), shown(turn)


async def test_the_turn_goes_on_from_its_own_message_without_what_another_person_wrote(
    tmp_path: Path,
) -> None:
    async with registry_over(tmp_path) as registry:
        session = registry.handle(await registry.create(NewSession(agent="a")))
        a_seq = await paused_while_another_wrote(session)
        assert shown(await session.messages())[-1] == B  # what "the last user message" was
        history, turn = await split(session, a_seq)
        assert history[-1] == A
        assert turn == [THE_CALL]
        await session.add_tool_result("c1", True, "hi")
        history, turn = await split(session, a_seq)
        assert history[-1] == A
        assert turn == [THE_CALL, ITS_RESULT]
        assert B not in history + turn


async def test_a_hooks_steering_stays_in_the_turn_while_another_persons_message_does_not(
    tmp_path: Path,
) -> None:
    async with registry_over(tmp_path) as registry:
        session = registry.handle(await registry.create(NewSession(agent="a")))
        a_seq = await paused_while_another_wrote(session)
        await session.add_tool_result("c1", True, "hi")
        await session.add_steering("check the output")
        history, turn = await split(session, a_seq)
        assert history[-1] == A
        assert turn == [THE_CALL, ITS_RESULT, "steering"]


async def test_a_message_another_person_wrote_while_the_turn_ran_is_left_out_too(
    tmp_path: Path,
) -> None:
    async with registry_over(tmp_path) as registry:
        session = registry.handle(await registry.create(NewSession(agent="a")))
        asked = await session.add_user_message(A.removeprefix("user: "), sender_id="7")
        await session.add_user_message(B.removeprefix("user: "), sender_id="8")
        await session.add_assistant_response("", tool_calls=[CALL], durable=True)
        history, turn = await split(session, asked.seq)
        assert history[-1] == A
        assert turn == [THE_CALL]


async def reloaded_split(
    folder: Path, session_id: str, a_seq: int
) -> tuple[list[str], list[str], list[str]]:
    """In a new registry over ``folder``: (history, turn) before and the turn after c1's result."""
    async with registry_over(folder) as registry:
        session = registry.handle(session_id)
        pending = (await session.info()).pending_approval
        assert pending is not None
        assert pending.turn_seq == a_seq
        history, turn = await split(session, pending.turn_seq)
        await session.add_tool_result("c1", True, "hi")
        _, after_result = await split(session, pending.turn_seq)
    return history, turn, after_result


async def test_the_split_is_the_same_when_the_snapshot_holds_the_approval(
    tmp_path: Path,
) -> None:
    async with registry_over(tmp_path) as registry:
        sid = await registry.create(NewSession(agent="a"))
        a_seq = await paused_while_another_wrote(registry.handle(sid))
    state = yaml.safe_load((tmp_path / sid / "state.yaml").read_text())
    assert state["config"]["pending_approval"]["turn_seq"] == a_seq
    history, turn, after_result = await reloaded_split(tmp_path, sid, a_seq)
    assert history[-1] == A
    assert turn == [THE_CALL]
    assert after_result == [THE_CALL, ITS_RESULT]


async def test_the_split_is_the_same_when_the_approval_is_replayed_from_the_event_log(
    tmp_path: Path,
) -> None:
    async with registry_over(tmp_path) as registry:
        sid = await registry.create(NewSession(agent="a"))
        a_seq = await paused_while_another_wrote(registry.handle(sid))
    (tmp_path / sid / "state.yaml").unlink()  # recovery rebuilds everything from the log
    history, turn, after_result = await reloaded_split(tmp_path, sid, a_seq)
    assert history[-1] == A
    assert turn == [THE_CALL]
    assert after_result == [THE_CALL, ITS_RESULT]


async def test_the_split_is_the_same_when_the_messages_come_from_the_snapshot(
    tmp_path: Path,
) -> None:
    async with registry_over(tmp_path) as registry:
        sid = await registry.create(NewSession(agent="a"))
        # B is the message that fills the window up to a checkpoint: all are in state.yaml
        earlier = CHECKPOINT_THRESHOLD - 3
        a_seq = await paused_while_another_wrote(registry.handle(sid), earlier=earlier)
    state = yaml.safe_load((tmp_path / sid / "state.yaml").read_text())
    a, call, b = state["conversation"][-3:]
    assert (a["content"], a["seq"], call["role"], b["content"]) == (
        A.removeprefix("user: "),
        a_seq,
        "assistant",
        B.removeprefix("user: "),
    )
    history, turn, after_result = await reloaded_split(tmp_path, sid, a_seq)
    assert history[-1] == A
    assert turn == [THE_CALL]
    assert after_result == [THE_CALL, ITS_RESULT]


async def test_an_approval_without_turn_seq_goes_on_from_the_last_message_before_the_call(
    tmp_path: Path,
) -> None:
    async with registry_over(tmp_path) as registry:
        session = registry.handle(await registry.create(NewSession(agent="a")))
        await paused_while_another_wrote(session, keep_turn_seq=False)
        pending = (await session.info()).pending_approval
        assert pending is not None
        assert pending.turn_seq is None
        history, turn = await split(session, None)
        assert history[-1] == A
        assert turn == [THE_CALL]
        await session.add_tool_result("c1", True, "hi")
        history, turn = await split(session, None)
        assert history[-1] == A
        assert turn == [THE_CALL, ITS_RESULT]


def test_an_approval_keeps_its_turn_seq_through_its_mapping() -> None:
    approval = PendingApproval(
        call_id="c1", command="echo hi", tool_name="bash", requester_id="7", turn_seq=4
    )
    assert approval.to_dict()["turn_seq"] == 4
    assert PendingApproval.from_dict(approval.to_dict()) == approval


def test_a_mapping_without_turn_seq_is_an_approval_without_one() -> None:
    older = {"call_id": "c1", "command": "echo hi", "tool_name": "bash", "requester_id": "7"}
    assert PendingApproval.from_dict(older).turn_seq is None
    assert "turn_seq" not in PendingApproval(call_id="c1").to_dict()


def test_the_approval_required_event_carries_turn_seq_only_when_it_is_known() -> None:
    kept = Event.approval_required(9, PendingApproval(call_id="c1", turn_seq=4))
    older = Event.approval_required(9, PendingApproval(call_id="c1"))
    assert kept.type == EventType.APPROVAL_REQUIRED.value
    assert kept.data["turn_seq"] == 4
    assert "turn_seq" not in older.data


@pytest.mark.parametrize("turn_seq", [4, None])
def test_an_approval_comes_back_from_its_event_as_it_went_in(turn_seq: int | None) -> None:
    approval = PendingApproval(
        call_id="c1", command="echo hi", tool_name="bash", requester_id="7", turn_seq=turn_seq
    )
    event = Event.approval_required(9, approval)
    assert PendingApproval.from_dict(event.data) == approval
