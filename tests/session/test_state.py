from __future__ import annotations

from typing import Any

from duragent.core.events import Event, EventType
from duragent.core.messages import Role, ToolCall
from duragent.core.snapshot import SessionSnapshot, SessionStatus
from duragent.session.state import (
    _RULES,
    CHECKPOINT_THRESHOLD,
    SessionState,
    actor_message_limit,
)


def fresh(limit: int = 1000) -> SessionState:
    return SessionState(
        SessionSnapshot(
            session_id="s", agent="a", created_at="t", updated_at="t", actor_message_limit=limit
        )
    )


class Feed:
    """Applies events with consecutive seqs."""

    def __init__(self, state: SessionState) -> None:
        self.state = state
        self.seq = state.last_seq

    def __call__(self, make: object, **kwargs: object) -> Event:
        self.seq += 1
        event: Event = make(self.seq, **kwargs)  # type: ignore[operator]
        self.state.apply(event)
        return event


def test_the_layer1_limit_is_clamped_between_100_and_2000() -> None:
    assert actor_message_limit(8_192) == 100
    assert actor_message_limit(32_000) == 320
    assert actor_message_limit(128_000) == 1280
    assert actor_message_limit(1_000_000) == 2000


def test_pending_rolls_into_checkpointed_at_the_threshold() -> None:
    state = fresh()
    feed = Feed(state)
    for i in range(CHECKPOINT_THRESHOLD - 1):
        feed(Event.user_message, content=f"m{i}")
    assert len(state.pending) == CHECKPOINT_THRESHOLD - 1
    assert state.checkpoint_seq == 0
    last = feed(Event.assistant_response, agent="a", content="reply")
    assert state.pending == []
    assert len(state.checkpointed) == CHECKPOINT_THRESHOLD
    assert state.checkpoint_seq == last.seq


def test_tool_results_do_not_roll_the_checkpoint() -> None:
    state = fresh()
    feed = Feed(state)
    calls = tuple(ToolCall(id=f"c{i}", name="t") for i in range(60))
    feed(Event.assistant_response, agent="a", content="", tool_calls=calls)
    for i in range(60):
        feed(Event.tool_result, call_id=f"c{i}", success=True, content="ok")
    assert state.checkpoint_seq == 0
    assert len(state.pending) == 61


def test_the_window_drops_the_oldest_checkpointed_messages_and_orphan_results() -> None:
    state = fresh(limit=100)
    feed = Feed(state)
    feed(Event.assistant_response, agent="a", content="", tool_calls=(ToolCall(id="c", name="t"),))
    feed(Event.tool_result, call_id="c", success=True, content="r")
    for i in range(150):
        feed(Event.user_message, content=f"m{i}")
    messages = state.messages()
    assert len(messages) <= 100
    assert messages[0].role is not Role.TOOL
    assert messages[-1].text == "m149"


def test_a_late_tool_result_is_placed_after_its_call() -> None:
    state = fresh()
    feed = Feed(state)
    call = ToolCall(id="c1", name="bash")
    feed(Event.assistant_response, agent="a", content="", tool_calls=(call,))
    feed(Event.user_message, content="are you there?")
    feed(Event.tool_result, call_id="c1", success=False, content="interrupted")
    roles = [m.role for m in state.messages()]
    assert roles == [Role.ASSISTANT, Role.TOOL, Role.USER]
    assert state.outstanding_call_ids() == []


def test_replaying_a_result_already_in_the_snapshot_adds_nothing() -> None:
    state = fresh()
    feed = Feed(state)
    feed(Event.assistant_response, agent="a", content="", tool_calls=(ToolCall(id="c", name="t"),))
    feed(Event.tool_result, call_id="c", success=True, content="r")
    snap = state.to_snapshot("now")
    snap.conversation = state.messages()
    snap.checkpoint_seq = 1  # the result (seq 2) is after the checkpoint but in the snapshot
    again = SessionState(snap)
    again.apply(Event.tool_result(2, call_id="c", success=True, content="r"))
    assert len(again.messages()) == 2


def test_outstanding_calls_exclude_the_one_awaiting_approval() -> None:
    state = fresh()
    feed = Feed(state)
    calls = (ToolCall(id="c1", name="t"), ToolCall(id="c2", name="t"))
    feed(Event.assistant_response, agent="a", content="", tool_calls=calls)
    state.pending_approval = {"call_id": "c2"}
    assert state.outstanding_call_ids() == ["c1"]


def test_skipped_calls_become_skipped_results() -> None:
    state = fresh()
    feed = Feed(state)
    calls = (ToolCall(id="c1", name="t"), ToolCall(id="c2", name="t"))
    feed(Event.assistant_response, agent="a", content="", tool_calls=calls)
    feed(Event.tools_skipped, call_ids=["c1", "c2"], reason="new user message received")
    assert [m.text for m in state.messages()[1:]] == [
        "Skipped: new user message received",
        "Skipped: new user message received",
    ]


def test_malformed_arguments_survive_as_the_exact_text() -> None:
    state = fresh()
    feed = Feed(state)
    call = ToolCall(id="c", name="t", arguments='{"broken": ')
    event = feed(Event.assistant_response, agent="a", content="", tool_calls=(call,))
    assert event.data["tool_calls"][0]["arguments"] is None
    assert state.messages()[0].tool_calls[0].arguments == '{"broken": '


def test_status_changes_and_deliveries_are_tracked() -> None:
    state = fresh()
    feed = Feed(state)
    feed(Event.status_change, old="active", new="paused")
    assert state.status is SessionStatus.PAUSED
    feed(Event.delivery, reply_seq=7, target="telegram:1")
    assert state.last_delivered_seq == 7


def test_answered_means_a_final_reply_came_after_the_message() -> None:
    state = fresh()
    feed = Feed(state)
    asked = feed(Event.user_message, content="q")
    assert not state.is_answered(asked.seq)
    feed(Event.assistant_response, agent="a", content="", tool_calls=(ToolCall(id="c", name="t"),))
    assert not state.is_answered(asked.seq)
    feed(Event.assistant_response, agent="a", content="answer")
    assert state.is_answered(asked.seq)


def test_a_failure_counts_as_the_answer_once_the_chat_was_told_and_after_a_snapshot() -> None:
    """A redelivered copy of a message whose failure the chat was told is not run again
    (it would tell the same failure twice); one whose failure was never told is."""
    state = fresh()
    feed = Feed(state)
    asked = feed(Event.user_message, content="a huge paste")
    failed = feed(Event.error, code="context_overflow", message="too big")
    assert not state.is_answered(asked.seq)  # not told yet: a copy tries again
    feed(Event.delivery, reply_seq=failed.seq, target="telegram:1")
    assert state.is_answered(asked.seq)
    restored = SessionSnapshot.from_dict(state.to_snapshot("now").to_dict())
    assert SessionState(restored).is_answered(asked.seq)
    later = feed(Event.user_message, content="next")
    assert not state.is_answered(later.seq)


def test_unknown_events_change_nothing_but_the_seq() -> None:
    state = fresh()
    state.apply(Event(seq=1, timestamp="t2", type="from_the_future", data={"x": 1}))
    assert state.messages() == []
    assert state.last_seq == 1
    assert state.updated_at == "t2"


def test_every_event_type_has_its_rule() -> None:
    assert set(_RULES) == {kind.value for kind in EventType}


def test_a_log_in_the_legacy_forms_replays_as_it_always_did() -> None:
    """The reference's ``assistant_message`` and ``tool_call``, a result of bare text, a skip
    without a reason, a delivery without a target: read with the defaults they always had."""
    records: list[tuple[EventType, dict[str, Any]]] = [
        (EventType.USER_MESSAGE, {"content": "hi"}),
        (EventType.ASSISTANT_MESSAGE, {"agent": "a", "content": "looking"}),
        (EventType.TOOL_CALL, {"call_id": "c1", "tool_name": "bash", "arguments": {"a": 1}}),
        (EventType.TOOL_RESULT, {"call_id": "c1", "result": "a b"}),
        (EventType.TOOL_CALL, {"call_id": "c2", "tool_name": "bash", "arguments": {}}),
        (EventType.TOOLS_SKIPPED, {"call_ids": ["c2"]}),
        (EventType.ASSISTANT_MESSAGE, {"content": "done", "usage": {"prompt_tokens": 3}}),
        (EventType.DELIVERY, {"reply_seq": 7}),
        (EventType.SESSION_END, {"reason": "bye"}),
    ]
    day = "2026-11-22T00:00:00.000Z"
    state = replayed(
        [Event(seq, day, kind.value, data) for seq, (kind, data) in enumerate(records, 1)]
    )
    assert [(m.role, m.text, [c.id for c in m.tool_calls]) for m in state.messages()] == [
        (Role.USER, "hi", []),
        (Role.ASSISTANT, "looking", ["c1"]),
        (Role.TOOL, "a b", []),
        (Role.ASSISTANT, "", ["c2"]),
        (Role.TOOL, "Skipped: skipped", []),
        (Role.ASSISTANT, "done", []),
    ]
    assert state.messages()[1].tool_calls[0].arguments == '{"a": 1}'
    assert (state.last_final_reply_seq, state.last_delivered_seq) == (7, 7)
    assert state.tokens_today == 3
    assert state.status is SessionStatus.COMPLETED


def test_a_replay_over_a_snapshot_keeps_its_pending_approval_whole() -> None:
    """Replay starts at the checkpoint, so it re-applies approvals the snapshot already holds.

    An earlier approval and its decision in that range must not replace the snapshot's
    pending approval with the event's partial copy (no tool name: "Tool 'None' is no longer
    available" when it is approved after a restart).
    """
    state = fresh()
    feed = Feed(state)
    events = [
        feed(Event.make, kind=EventType.APPROVAL_REQUIRED, call_id="c1", command="ls"),
        feed(Event.make, kind=EventType.APPROVAL_DECISION, call_id="c1", decision="allow_once"),
        feed(Event.make, kind=EventType.APPROVAL_REQUIRED, call_id="c2", command="date"),
    ]
    whole = {"call_id": "c2", "tool_name": "bash", "arguments": {"command": "date"}}
    state.pending_approval = {**whole, "command": "date", "tool_type": "bash"}
    snap = state.to_snapshot("now")
    snap.checkpoint_seq = 0  # nothing checkpointed: every event is replayed

    again = SessionState(snap)
    for event in events:
        again.apply(event)

    assert again.pending_approval == state.pending_approval


def replayed(events: list[Event]) -> SessionState:
    state = fresh()
    for event in events:
        state.apply(event)
    return state


def test_a_call_id_a_model_reuses_in_a_later_turn_gets_its_own_result_live_and_replayed() -> None:
    """Some local servers number calls per turn (``call_0`` every time): ids repeat."""
    state = fresh()
    feed = Feed(state)
    events = []
    for turn in range(3):
        call = ToolCall(id="call_0", name="bash")
        events.append(feed(Event.user_message, content=f"do {turn}"))
        events.append(feed(Event.assistant_response, agent="a", content="", tool_calls=(call,)))
        assert state.outstanding_call_ids() == ["call_0"]
        events.append(feed(Event.tool_result, call_id="call_0", success=True, content=f"r{turn}"))
        events.append(feed(Event.assistant_response, agent="a", content=f"done {turn}"))
    results = [m.content for m in state.messages() if m.role is Role.TOOL]
    assert results == ["r0", "r1", "r2"]
    assert state.outstanding_call_ids() == []
    assert [m.content for m in replayed(events).messages()] == [m.content for m in state.messages()]


def test_a_reused_call_id_left_open_by_a_crash_is_outstanding_after_recovery() -> None:
    state = fresh()
    feed = Feed(state)
    call = ToolCall(id="call_0", name="bash")
    events = [
        feed(Event.assistant_response, agent="a", content="", tool_calls=(call,)),
        feed(Event.tool_result, call_id="call_0", success=True, content="first"),
        feed(Event.assistant_response, agent="a", content="", tool_calls=(call,)),
    ]
    assert replayed(events).outstanding_call_ids() == ["call_0"]
