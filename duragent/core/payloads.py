"""What each kind of session event carries: the event types and a typed read view per type.

An event's payload is a JSON object read back from ``events.jsonl``, written by this version,
an older one or the reference. Readers used to pick its fields by name (a misspelt name read
as "absent", silently); each type now has a view that knows its fields, their types and what
a field an older record lacks (or holds ``null``) reads as. ``View.of(data)`` reads a
payload; ``view.to_data()`` is the payload the constructors of ``core.events.Event`` write, so
every field name lives in these views. The conversation's views are here, those of the
session's progress (its start, approvals, status, failures, deliveries, summaries, pins) in
``core.progress_payloads``, re-exported here; ``VIEWS`` says which view reads which type.

Views are ``NamedTuple``s built straight from the mapping: every event goes through one in
``SessionState.apply``, live and when a long log is replayed, and a tuple is built in a
fraction of a frozen dataclass's time (no validation library; the payload is not copied).
The views read there test a field's type inline, so the usual value costs no call.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from duragent.core.attachments import Attachment, attachments_of
from duragent.core.messages import ToolCall
from duragent.core.payload_fields import as_mapping, as_maybe_seq, as_text, new_view
from duragent.core.progress_payloads import (
    ApprovalDecisionData,
    ApprovalRequiredData,
    DeliveryData,
    ErrorData,
    PinData,
    SessionEndData,
    SessionStartData,
    StatusChangeData,
    SummaryData,
    UnpinData,
)

__all__ = [
    "VIEWS",
    "ApprovalDecisionData",
    "ApprovalRequiredData",
    "AssistantResponseData",
    "DeliveryData",
    "ErrorData",
    "EventType",
    "PayloadView",
    "PinData",
    "SessionEndData",
    "SessionStartData",
    "SilentMessageData",
    "StatusChangeData",
    "SteeringData",
    "SummaryData",
    "ToolCallRecord",
    "ToolResultData",
    "ToolsSkippedData",
    "UnpinData",
    "UserMessageData",
    "call_from_record",
    "usage_tokens",
]


class EventType(enum.StrEnum):
    """Every event type this version writes or understands."""

    SESSION_START = "session_start"
    SESSION_END = "session_end"
    USER_MESSAGE = "user_message"
    ASSISTANT_MESSAGE = "assistant_message"
    ASSISTANT_RESPONSE = "assistant_response"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    TOOLS_SKIPPED = "tools_skipped"
    APPROVAL_REQUIRED = "approval_required"
    APPROVAL_DECISION = "approval_decision"
    STATUS_CHANGE = "status_change"
    SILENT_MESSAGE = "silent_message"
    ERROR = "error"
    DELIVERY = "delivery"
    SUMMARY = "summary"
    PIN = "pin"
    UNPIN = "unpin"
    STEERING = "steering"


def _said(data: Mapping[str, Any]) -> tuple[str, str | None, str | None, str | None]:
    """What a person's message carries: its text, sender id and name, platform id.

    Read for every user and group message, live and in every replay: the usual value (a
    string, or an absent sender) costs no call.
    """
    get = data.get
    content, sender, name, pid = (
        get("content"),
        get("sender_id"),
        get("sender_name"),
        get("platform_message_id"),
    )
    return (
        content if content.__class__ is str else as_text(content),
        sender if sender is None or sender.__class__ is str else str(sender),
        name if name is None or name.__class__ is str else str(name),
        pid if pid is None or pid.__class__ is str else str(pid),
    )


class UserMessageData(NamedTuple):
    """A message from the user or a group member.

    ``passive``: recorded for later turns to read, owed no answer; written only when true.
    ``attachments``: what the message carried, recorded in its own event so the two are
    durable together; written only when there are some, and a record that is not an
    attachment is skipped on reading (``attachments_of``), never failing a replay.
    """

    content: str = ""
    sender_id: str | None = None
    sender_name: str | None = None
    platform_message_id: str | None = None
    passive: bool = False
    attachments: tuple[Attachment, ...] = ()

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> UserMessageData:
        """The view of a ``user_message`` payload."""
        carried = data.get("attachments")
        found = () if carried is None else attachments_of(carried)
        return new_view(cls, (*_said(data), bool(data.get("passive")), found))

    def to_data(self) -> dict[str, Any]:
        """The payload as written (``passive``, ``attachments`` only when set: as before)."""
        data: dict[str, Any] = {
            "content": self.content,
            "sender_id": self.sender_id,
            "sender_name": self.sender_name,
            "platform_message_id": self.platform_message_id,
        }
        if self.passive:
            data["passive"] = True
        if self.attachments:
            data["attachments"] = [a.to_data() for a in self.attachments]
        return data


class ToolCallRecord(NamedTuple):
    """A tool call as stored: in a response's ``tool_calls``, or a legacy ``tool_call`` event.

    ``arguments`` is the JSON value the model sent (null when it was not valid JSON, with the
    exact text in ``arguments_raw``, so recovery shows the model what it really sent).
    """

    call_id: str = ""
    tool_name: str = ""
    arguments: Any = None
    arguments_raw: str | None = None

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> ToolCallRecord:
        """The view of a stored call record."""
        get = data.get
        call_id, name, raw = get("call_id"), get("tool_name"), get("arguments_raw")
        return new_view(
            cls,
            (
                call_id if call_id.__class__ is str else as_text(call_id),
                name if name.__class__ is str else as_text(name),
                get("arguments"),
                raw if raw is None or isinstance(raw, str) else None,
            ),
        )

    @classmethod
    def from_call(cls, call: ToolCall) -> ToolCallRecord:
        """The record of ``call`` (the reference's shape: arguments as a JSON value)."""
        text = call.arguments.strip()
        if not text:
            return cls(call.id, call.name, {})
        try:
            return cls(call.id, call.name, json.loads(text))
        except (json.JSONDecodeError, RecursionError):  # nested too deep for the parser: text
            return cls(call.id, call.name, None, call.arguments)

    def to_call(self) -> ToolCall:
        """The ToolCall the record describes (inverse of ``from_call``)."""
        if self.arguments_raw is not None:
            arguments = self.arguments_raw
        elif self.arguments is None:
            arguments = "{}"
        else:
            arguments = json.dumps(self.arguments, ensure_ascii=False)
        return ToolCall(id=self.call_id, name=self.tool_name, arguments=arguments)

    def to_data(self) -> dict[str, Any]:
        """The record as written (``arguments`` kept even when null)."""
        data = {"call_id": self.call_id, "tool_name": self.tool_name, "arguments": self.arguments}
        if self.arguments_raw is not None:
            data["arguments_raw"] = self.arguments_raw
        return data


def call_from_record(record: Mapping[str, Any]) -> ToolCall:
    """The ToolCall a stored call record describes."""
    return ToolCallRecord.of(record).to_call()


def usage_tokens(usage: Mapping[str, Any] | None) -> int:
    """Prompt plus completion tokens of a stored usage object (0 when there is none)."""
    if usage is None:
        return 0
    return int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)


class AssistantResponseData(NamedTuple):
    """The model's answer (also the view of the legacy ``assistant_message``).

    ``answers_seq``: the newest user message a final reply answers, when that is not every
    message before it (a ``sequential`` chat queue's turn). ``attachments``: the files a
    final reply carries, as recorded (``tools.send_file.ReplyFile`` views them); only if any.
    """

    agent: str = ""
    content: str = ""
    tool_calls: Sequence[Mapping[str, Any]] = ()
    """The stored call records, as read (``ToolCallRecord`` views them)."""
    usage: Mapping[str, Any] | None = None
    message_id: str | None = None
    budget: Mapping[str, Any] | None = None
    answers_seq: int | None = None
    attachments: Sequence[Mapping[str, Any]] = ()

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> AssistantResponseData:
        """The view of an ``assistant_response`` (or ``assistant_message``) payload."""
        get = data.get
        agent, content, usage, message_id, budget, answers = (
            get("agent"),
            get("content"),
            get("usage"),
            get("message_id"),
            get("budget"),
            get("answers_seq"),
        )
        return new_view(
            cls,
            (
                agent if agent.__class__ is str else as_text(agent),
                content if content.__class__ is str else as_text(content),
                get("tool_calls") or (),
                usage if usage is None or usage.__class__ is dict else as_mapping(usage),
                message_id
                if message_id is None or message_id.__class__ is str
                else str(message_id),
                budget if budget is None or budget.__class__ is dict else as_mapping(budget),
                answers if answers is None or answers.__class__ is int else as_maybe_seq(answers),
                get("attachments") or (),
            ),
        )

    def calls(self) -> tuple[ToolCall, ...]:
        """The tool calls the model asked for (none: a final reply)."""
        if not self.tool_calls:
            return ()
        return tuple(ToolCallRecord.of(record).to_call() for record in self.tool_calls)

    def to_data(self) -> dict[str, Any]:
        """The payload as written (no ``tool_calls`` or ``budget`` when empty)."""
        return {
            "agent": self.agent,
            "content": self.content,
            "tool_calls": list(self.tool_calls) or None,
            "usage": self.usage,
            "message_id": self.message_id,
            "budget": self.budget or None,
            "answers_seq": self.answers_seq,
            **({"attachments": list(self.attachments)} if self.attachments else {}),
        }


class ToolResultData(NamedTuple):
    """What a tool returned. ``success`` is None when an old record does not say."""

    call_id: str = ""
    success: bool | None = None
    content: str = ""

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> ToolResultData:
        """The view of a ``tool_result`` payload (a bare, non-object result is its content)."""
        call_id, result = data.get("call_id"), data.get("result")
        if call_id.__class__ is not str:
            call_id = as_text(call_id)
        if result.__class__ is dict or isinstance(result, Mapping):
            success, content = result.get("success"), result.get("content")
            return new_view(
                cls,
                (
                    call_id,
                    success if success is None or success.__class__ is bool else bool(success),
                    content if content.__class__ is str else as_text(content),
                ),
            )
        return new_view(cls, (call_id, None, "" if not result else str(result)))

    def to_data(self) -> dict[str, Any]:
        """The payload as written."""
        return {
            "call_id": self.call_id,
            "result": {"success": self.success, "content": self.content},
        }


class ToolsSkippedData(NamedTuple):
    """Calls that were not run (approval needed, user interrupted, …)."""

    call_ids: tuple[str, ...] = ()
    reason: str = "skipped"

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> ToolsSkippedData:
        """The view of a ``tools_skipped`` payload."""
        ids = data.get("call_ids") or ()
        return cls(tuple(as_text(i) for i in ids), as_text(data.get("reason"), "skipped"))

    def to_data(self) -> dict[str, Any]:
        """The payload as written."""
        return {"call_ids": list(self.call_ids), "reason": self.reason}


class SteeringData(NamedTuple):
    """An ``after_tool`` hook's text, read by the model after the tool results."""

    content: str = ""

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> SteeringData:
        """The view of a ``steering`` payload."""
        content = data.get("content")
        return new_view(cls, (content if content.__class__ is str else as_text(content),))

    def to_data(self) -> dict[str, Any]:
        """The payload as written."""
        return {"content": self.content}


class SilentMessageData(NamedTuple):
    """Group chatter the agent only listens to (its context buffer, never its history)."""

    content: str = ""
    sender_id: str | None = None
    sender_name: str | None = None
    platform_message_id: str | None = None

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> SilentMessageData:
        """The view of a ``silent_message`` payload."""
        return new_view(cls, _said(data))

    def to_data(self) -> dict[str, Any]:
        """The payload as written."""
        return {
            "content": self.content,
            "sender_id": self.sender_id,
            "sender_name": self.sender_name,
            "platform_message_id": self.platform_message_id,
        }


class PayloadView(Protocol):
    """What every view offers besides its fields: the payload it stands for."""

    def to_data(self) -> dict[str, Any]:
        """The payload as the writers record it."""
        ...


VIEWS: Mapping[str, Callable[[Mapping[str, Any]], PayloadView]] = {
    EventType.SESSION_START: SessionStartData.of,
    EventType.SESSION_END: SessionEndData.of,
    EventType.USER_MESSAGE: UserMessageData.of,
    EventType.ASSISTANT_MESSAGE: AssistantResponseData.of,
    EventType.ASSISTANT_RESPONSE: AssistantResponseData.of,
    EventType.TOOL_CALL: ToolCallRecord.of,
    EventType.TOOL_RESULT: ToolResultData.of,
    EventType.TOOLS_SKIPPED: ToolsSkippedData.of,
    EventType.APPROVAL_REQUIRED: ApprovalRequiredData.of,
    EventType.APPROVAL_DECISION: ApprovalDecisionData.of,
    EventType.STATUS_CHANGE: StatusChangeData.of,
    EventType.SILENT_MESSAGE: SilentMessageData.of,
    EventType.ERROR: ErrorData.of,
    EventType.DELIVERY: DeliveryData.of,
    EventType.SUMMARY: SummaryData.of,
    EventType.PIN: PinData.of,
    EventType.UNPIN: UnpinData.of,
    EventType.STEERING: SteeringData.of,
}
"""Each event type → how its payload is read (a kind without one fails a test)."""
