"""Every event type has a typed view; old records read as before; writers and views agree."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from duragent.core.approval import ApprovalDecision, PendingApproval
from duragent.core.attachments import Attachment, AttachmentKind, content_hash
from duragent.core.events import Event
from duragent.core.messages import ToolCall, Usage
from duragent.core.payloads import (
    VIEWS,
    ApprovalRequiredData,
    AssistantResponseData,
    DeliveryData,
    ErrorData,
    EventType,
    PinData,
    SessionStartData,
    StatusChangeData,
    SummaryData,
    ToolCallRecord,
    ToolResultData,
    ToolsSkippedData,
    UserMessageData,
    usage_tokens,
)

PACKAGE = Path(__file__).resolve().parents[2] / "duragent"
PHOTO = Attachment(
    kind=AttachmentKind.IMAGE,
    mime="image/jpeg",
    size=3,
    sha256=content_hash(b"jpg"),
    name="holiday.jpg",
    platform_id="tg-file-1",
    width=640,
    height=480,
)

WRITTEN: list[Callable[[], Event]] = [
    lambda: Event.session_start(
        1,
        agent="a",
        on_disconnect="pause",
        gateway="telegram",
        gateway_chat_id="42",
        gateway_chat_type="group",
    ),
    lambda: Event.user_message(
        2,
        content="hi",
        sender_id="u1",
        sender_name="Ann",
        platform_message_id="p1",
        passive=True,
        attachments=[PHOTO],
    ),
    lambda: Event.assistant_response(
        3,
        agent="a",
        content="",
        tool_calls=[
            ToolCall(id="c1", name="bash", arguments='{"command": "ls"}'),
            ToolCall(id="c2", name="bash", arguments="{not json"),
        ],
        usage=Usage(prompt_tokens=10, completion_tokens=2, cost_usd=0.5),
        message_id="m1",
        budget={"request_tokens": 12},
        answers_seq=2,
    ),
    lambda: Event.tool_result(4, call_id="c1", success=False, content="refused"),
    lambda: Event.tools_skipped(5, call_ids=["c2"], reason="approval needed"),
    lambda: Event.approval_required(
        6,
        PendingApproval(
            call_id="c2", command="rm x", tool_name="bash", arguments={"command": "rm x"}
        ),
    ),
    lambda: Event.approval_decision(7, call_id="c2", decision=ApprovalDecision.DENY),
    lambda: Event.status_change(8, old="running", new="active"),
    lambda: Event.silent_message(
        9, content="chatter", sender_id="u2", sender_name="Bo", platform_message_id="p2"
    ),
    lambda: Event.error(10, code="provider_error", message="the model failed"),
    lambda: Event.delivery(11, reply_seq=3, target="telegram:42"),
    lambda: Event.summary(
        12,
        round=2,
        summary="so far",
        through_seq=9,
        messages=8,
        tokens_before=900,
        tokens_after=100,
        model="cheap",
        usage=Usage(prompt_tokens=5, completion_tokens=1),
        extractive=True,
    ),
    lambda: Event.pin(13, pin_id="p1", kind="decision", text="use tabs", source="agent"),
    lambda: Event.unpin(14, pin_id="p1"),
    lambda: Event.steering(15, content="check the logs"),
]
"""One event of every type the package writes, with every optional field set."""

READ_ONLY = {EventType.SESSION_END, EventType.ASSISTANT_MESSAGE, EventType.TOOL_CALL}
"""Types only the reference or an older version wrote: read, never written."""


def test_every_event_type_has_a_view() -> None:
    assert set(VIEWS) == set(EventType)


def test_every_type_but_the_legacy_ones_is_written_by_a_constructor_of_event() -> None:
    kinds = {make().type for make in WRITTEN}
    assert kinds | READ_ONLY == set(EventType)
    assert not kinds & READ_ONLY


@pytest.mark.parametrize("make", WRITTEN, ids=lambda make: make().type)
def test_a_written_payload_reads_back_through_its_view_as_written(
    make: Callable[[], Event],
) -> None:
    event = make()
    view = VIEWS[event.type](Event.from_json(event.to_json()).data)
    assert {k: v for k, v in view.to_data().items() if v is not None} == event.data


@pytest.mark.parametrize("kind", sorted(EventType))
def test_an_empty_payload_reads_as_the_views_defaults(kind: str) -> None:
    view = VIEWS[kind]({})
    assert view == type(view)()


@pytest.mark.parametrize("kind", sorted(EventType))
def test_a_payload_of_nulls_reads_as_the_views_defaults(kind: str) -> None:
    default = VIEWS[kind]({})
    nulls = dict.fromkeys(default.to_data())
    assert VIEWS[kind](nulls) == default


def test_a_user_message_without_passive_is_owed_an_answer() -> None:
    assert UserMessageData.of({"content": "hi"}).passive is False
    assert "passive" not in UserMessageData(content="hi").to_data()  # written as before


def test_a_user_message_without_attachments_is_written_as_before() -> None:
    assert "attachments" not in UserMessageData(content="hi").to_data()
    assert UserMessageData.of({"content": "hi"}).attachments == ()


def test_a_user_messages_attachments_read_back_as_written() -> None:
    event = Event.user_message(1, content="look", attachments=[PHOTO])
    assert event.data["attachments"] == [PHOTO.to_data()]
    assert UserMessageData.of(Event.from_json(event.to_json()).data).attachments == (PHOTO,)


@pytest.mark.parametrize(
    "junk",
    [
        "not a list",
        7,
        {"kind": "image"},
        [None, 3, "x", [], {}],
        [{"kind": "sticker", "mime": "image/webp", "size": 1, "sha256": "0" * 64}],
        [{"kind": "image", "mime": "image/png", "size": 1, "sha256": "../../etc/passwd"}],
        [{"kind": "image", "mime": "image/png", "size": 1e999, "sha256": "0" * 64}],
        [{"kind": "image", "mime": "image/png", "size": -1, "sha256": "0" * 64}],
    ],
)
def test_attachment_records_that_are_not_attachments_are_skipped_never_failing_replay(
    junk: object,
) -> None:
    data = {"content": "hi", "platform_message_id": "p1", "attachments": junk}
    message = UserMessageData.of(data)
    assert (message.content, message.platform_message_id, message.attachments) == ("hi", "p1", ())


def test_one_damaged_attachment_record_costs_only_itself() -> None:
    records = [{"kind": "image"}, PHOTO.to_data(), "junk"]
    assert UserMessageData.of({"content": "hi", "attachments": records}).attachments == (PHOTO,)


def test_a_tool_result_whose_result_is_plain_text_reads_it_as_its_content() -> None:
    assert ToolResultData.of({"call_id": "c1", "result": "done"}) == ToolResultData(
        "c1", None, "done"
    )


def test_a_tool_result_that_does_not_say_whether_it_succeeded_leaves_success_unknown() -> None:
    result = ToolResultData.of({"call_id": "c1", "result": {"content": "x"}})
    assert result.success is None
    nulls = {"call_id": None, "result": {"success": None, "content": None}}
    assert ToolResultData.of(nulls) == ToolResultData()


def test_skipped_calls_without_a_reason_read_as_skipped() -> None:
    assert ToolsSkippedData.of({"call_ids": ["a", 7]}) == ToolsSkippedData(("a", "7"), "skipped")


def test_a_status_change_reads_from_and_to_as_old_and_new() -> None:
    change = StatusChangeData.of({"from": "running", "to": "paused"})
    assert (change.old, change.new) == ("running", "paused")


def test_a_pin_without_a_kind_or_source_is_a_users_note() -> None:
    assert PinData.of({"pin_id": "p", "text": "t", "kind": ""}) == PinData("p", "note", "t", "user")


def test_a_delivery_counts_its_parts_only_when_partial_and_an_old_one_is_whole() -> None:
    whole = DeliveryData(reply_seq=7, target="telegram:1")
    assert whole.to_data() == {"reply_seq": 7, "target": "telegram:1"}  # written as before
    assert DeliveryData.of({"reply_seq": 7, "target": "telegram:1"}).parts is None
    partial = DeliveryData(reply_seq=7, target="telegram:1", parts=2)
    assert partial.to_data() == {"reply_seq": 7, "target": "telegram:1", "parts": 2}
    assert DeliveryData.of(partial.to_data()) == partial
    assert DeliveryData.of({"reply_seq": 7, "parts": "junk"}).parts is None


def test_values_of_another_json_type_are_converted_as_readers_always_did() -> None:
    assert UserMessageData.of({"content": 5, "platform_message_id": 12}).content == "5"
    assert UserMessageData.of({"platform_message_id": 12}).platform_message_id == "12"
    assert DeliveryData.of({"reply_seq": "7"}).reply_seq == 7
    assert AssistantResponseData.of({"answers_seq": "3", "usage": [1]}).answers_seq is None
    assert AssistantResponseData.of({"usage": [1]}).usage is None
    with pytest.raises(ValueError):
        SummaryData.of({"messages": "many"})  # replay refused such a record before, too


def test_a_legacy_assistant_message_reads_as_a_final_reply() -> None:
    old = {"agent": "a", "content": "hello", "usage": {"prompt_tokens": 3}}
    reply = VIEWS[EventType.ASSISTANT_MESSAGE](old)
    assert isinstance(reply, AssistantResponseData)
    assert reply.calls() == ()
    assert reply.content == "hello"
    assert usage_tokens(reply.usage) == 3


def test_a_legacy_tool_call_event_reads_as_the_call_it_records() -> None:
    call = ToolCallRecord.of({"call_id": "c1", "tool_name": "bash", "arguments": {"a": 1}})
    assert call.to_call() == ToolCall(id="c1", name="bash", arguments='{"a": 1}')


def test_a_call_with_arguments_that_are_not_json_keeps_their_exact_text() -> None:
    call = ToolCall(id="c1", name="bash", arguments="{oops")
    record = ToolCallRecord.from_call(call)
    assert record.arguments is None
    assert ToolCallRecord.of(record.to_data()).to_call() == call


def test_a_call_without_arguments_is_stored_as_an_empty_object() -> None:
    record = ToolCallRecord.from_call(ToolCall(id="c1", name="t", arguments="  "))
    assert record.to_data() == {"call_id": "c1", "tool_name": "t", "arguments": {}}
    assert ToolCallRecord.of({"call_id": "c1", "tool_name": "t"}).to_call().arguments == "{}"


def test_an_approval_written_before_it_held_the_tool_reads_without_it() -> None:
    asked = ApprovalRequiredData.of({"call_id": "c7", "command": "rm x"})
    assert asked == ApprovalRequiredData(call_id="c7", command="rm x")
    assert asked.tool_name is None
    assert asked.arguments is None


def test_the_approval_required_payload_is_the_pending_approvals_own_mapping() -> None:
    approval = PendingApproval(
        call_id="c1", command="ls", tool_name="bash", arguments={"command": "ls"}, requester_id="u"
    )
    event = Event.approval_required(1, approval)
    assert event.data == approval.to_dict()
    assert PendingApproval.from_dict(event.data) == approval


def test_a_session_start_without_a_chat_leaves_the_chat_unknown() -> None:
    start = SessionStartData.of({"agent": "a", "on_disconnect": "pause"})
    assert (start.gateway, start.gateway_chat_id, start.gateway_chat_type) == (None, None, None)


def test_an_error_without_a_message_still_has_its_code() -> None:
    assert ErrorData.of({"code": "x"}) == ErrorData("x", "")


def test_usage_counts_prompt_and_completion_tokens_and_nothing_when_absent() -> None:
    assert usage_tokens({"prompt_tokens": 3, "completion_tokens": None, "total_tokens": 99}) == 3
    assert usage_tokens(None) == 0


KEYED_READ = re.compile(r"\bdata\.get\(|\.data\[")
"""A payload field picked by name (``event.data.get("…")``, ``data.get("…")``, ``e.data[…]``)."""


@pytest.mark.parametrize("package", ["session", "turns"])
def test_sessions_and_turns_read_event_payloads_only_through_the_views(package: str) -> None:
    modules = sorted((PACKAGE / package).rglob("*.py"))
    assert modules, f"no modules under {PACKAGE / package}"
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}"
        for path in modules
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if KEYED_READ.search(line)
    ]
    assert not found, "read these payloads through duragent.core.payloads:\n" + "\n".join(found)
