"""Session events: one JSON object per line of ``events.jsonl``.

The wire shape is the reference's: ``{"seq": N, "timestamp": RFC3339, "type": T, ...payload}``
with the payload fields flattened into the object. ``Event`` keeps the payload as a mapping
so that unknown types (written by a newer version) are kept and passed through untouched;
the constructors below are the only way our code *writes* each known type, each through the
type's view in ``core.payloads`` (which readers use too), so every field name lives there.

Known types (reference §2.5, plus ours marked *):

| type | payload |
|---|---|
| session_start | agent, on_disconnect, gateway?, gateway_chat_id?, gateway_chat_type? |
| user_message | content, sender_id?, sender_name?, platform_message_id*, passive* |
| assistant_response | agent, content, tool_calls? [{call_id, tool_name, arguments}], usage?, |
|   | message_id*, budget*, answers_seq* |
| assistant_message | agent, content, usage? (legacy, read only) |
| tool_call | call_id, tool_name, arguments (legacy, read only) |
| tool_result | call_id, result {success, content} |
| tools_skipped | call_ids [], reason |
| approval_required | call_id, command, tool_name*, arguments*, tool_type*, requester_id*, |
|   | turn_seq*, answers_seq* |
| approval_decision | call_id, decision (allow_once / allow_always / deny) |
| status_change | from, to |
| silent_message | content, sender_id, sender_name?, platform_message_id* — group chatter kept |
|   | for context, never model history (the session's durable context buffer) |
| error | code, message |
| session_end | reason (the reference's; read only) |
| delivery* | reply_seq, target — a reply was handed to its chat (sent once, even across restarts) |
| summary* | round, summary, through_seq, messages, tokens_before, tokens_after, model, |
|   | usage?, extractive — the oldest ``messages`` of the window were replaced by ``summary`` |
| pin* | pin_id, kind (task / decision / note), text, source — a never-summarised section |
| unpin* | pin_id |
| steering* | content — an ``after_tool`` hook's text; the model reads it as the user message |
|   | ``[steering] <content>`` after the tool results of the response that triggered it |
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from duragent.core.approval import ApprovalDecision, PendingApproval
from duragent.core.attachments import Attachment
from duragent.core.clock import now_seconds
from duragent.core.messages import ToolCall, Usage
from duragent.core.nesting import loads_bounded
from duragent.core.payloads import (
    ApprovalDecisionData,
    ApprovalRequiredData,
    AssistantResponseData,
    DeliveryData,
    ErrorData,
    EventType,
    PayloadView,
    PinData,
    SessionStartData,
    SilentMessageData,
    StatusChangeData,
    SteeringData,
    SummaryData,
    ToolCallRecord,
    ToolResultData,
    ToolsSkippedData,
    UnpinData,
    UserMessageData,
)

__all__ = [
    "Event",
    "EventType",
    "now_rfc3339",
]


_second_prefix: tuple[int, str] = (-1, "")


def now_rfc3339() -> str:
    """The current UTC time as RFC 3339 with milliseconds and a ``Z``.

    Every event is stamped on a session's hot path, so the date part is formatted once per
    second and reused (``datetime.isoformat`` cost ~12 µs a call here; this ~1 µs).
    """
    global _second_prefix
    now = now_seconds()
    second = int(now)
    cached_second, prefix = _second_prefix  # one tuple: consistent across threads
    if second != cached_second:
        prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        _second_prefix = (second, prefix)
    return f"{prefix}.{int((now - second) * 1000):03d}Z"


# One encoder for every line: ``json.dumps`` with options builds a new encoder per call.
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


@dataclass(frozen=True, slots=True)
class Event:
    """One persisted event: sequence number, time, type and payload."""

    seq: int
    timestamp: str
    type: str
    data: Mapping[str, Any]

    def to_json(self) -> str:
        """The ``events.jsonl`` line (without the newline)."""
        return _ENCODE(
            {"seq": self.seq, "timestamp": self.timestamp, "type": self.type, **self.data}
        )

    @classmethod
    def from_json(cls, line: str | bytes) -> Event:
        """Parse one line; raises ``ValueError`` if it is not a well-formed event.

        A line nested deeper than ``MAX_NESTING_DEPTH`` is a ``ValueError`` too (``json`` alone
        would raise ``RecursionError``, which callers do not expect).
        """
        obj = loads_bounded(line)
        if not isinstance(obj, dict):
            raise ValueError("event is not a JSON object")
        seq = obj.pop("seq", None)
        kind = obj.pop("type", None)
        timestamp = obj.pop("timestamp", "")
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
            raise ValueError(f"event has no valid seq: {seq!r}")
        if not isinstance(kind, str) or not kind:
            raise ValueError("event has no type")
        return cls(seq=seq, timestamp=str(timestamp), type=kind, data=obj)

    # --- constructors for every type we write -----------------------------------------

    @classmethod
    def make(cls, seq: int, kind: EventType, **data: Any) -> Event:
        """An event of ``kind`` now with the payload ``data``; ``None`` values are omitted.

        For a payload no view describes (a record in an older form, in tests); the package
        writes each type with its constructor below. Lone surrogates (possible in JSON input,
        impossible in UTF-8 files) become U+FFFD here, so what the session holds in memory is
        exactly what is on disk.
        """
        return cls(seq=seq, timestamp=now_rfc3339(), type=kind.value, data=_stored(data))

    @classmethod
    def with_payload(cls, seq: int, kind: EventType, payload: PayloadView) -> Event:
        """An event of ``kind`` now, carrying ``payload`` (as ``make``: no ``None`` values)."""
        return cls(
            seq=seq, timestamp=now_rfc3339(), type=kind.value, data=_stored(payload.to_data())
        )

    @classmethod
    def session_start(
        cls,
        seq: int,
        *,
        agent: str,
        on_disconnect: str,
        gateway: str | None = None,
        gateway_chat_id: str | None = None,
        gateway_chat_type: str | None = None,
    ) -> Event:
        """The first event of every session."""
        start = SessionStartData(
            agent=agent,
            on_disconnect=on_disconnect,
            gateway=gateway,
            gateway_chat_id=gateway_chat_id,
            gateway_chat_type=gateway_chat_type,
        )
        return cls.with_payload(seq, EventType.SESSION_START, start)

    @classmethod
    def user_message(
        cls,
        seq: int,
        *,
        content: str,
        sender_id: str | None = None,
        sender_name: str | None = None,
        platform_message_id: str | None = None,
        passive: bool = False,
        attachments: Sequence[Attachment] = (),
    ) -> Event:
        """A message from the user (or a group member).

        ``passive``: recorded for later turns to read, owed no answer (a group's passive
        member, or a message not addressed to the bot); written only when true.
        ``attachments``: what it carried (their bytes stored first); written only when some.
        """
        message = UserMessageData(
            content=content,
            sender_id=sender_id,
            sender_name=sender_name,
            platform_message_id=platform_message_id,
            passive=passive,
            attachments=tuple(attachments),
        )
        return cls.with_payload(seq, EventType.USER_MESSAGE, message)

    @classmethod
    def assistant_response(
        cls,
        seq: int,
        *,
        agent: str,
        content: str,
        tool_calls: Sequence[ToolCall] = (),
        usage: Usage | None = None,
        message_id: str | None = None,
        budget: Mapping[str, Any] | None = None,
        answers_seq: int | None = None,
    ) -> Event:
        """The model's answer; tool call arguments are stored as JSON values (null if invalid).

        ``answers_seq``: the newest user message a final reply answers, when that is not every
        message before it (a ``sequential`` chat queue's turn; see ``SessionState``).
        """
        response = AssistantResponseData(
            agent=agent,
            content=content,
            tool_calls=[ToolCallRecord.from_call(c).to_data() for c in tool_calls],
            usage=usage.to_dict() if usage else None,
            message_id=message_id,
            budget=dict(budget) if budget else None,
            answers_seq=answers_seq,
        )
        return cls.with_payload(seq, EventType.ASSISTANT_RESPONSE, response)

    @classmethod
    def tool_result(cls, seq: int, *, call_id: str, success: bool, content: str) -> Event:
        """What a tool returned (already truncated to the agent's limit)."""
        return cls.with_payload(
            seq,
            EventType.TOOL_RESULT,
            ToolResultData(call_id=call_id, success=success, content=content),
        )

    @classmethod
    def tools_skipped(cls, seq: int, *, call_ids: Sequence[str], reason: str) -> Event:
        """Calls that were not run (approval needed, user interrupted, …)."""
        skipped = ToolsSkippedData(call_ids=tuple(call_ids), reason=reason)
        return cls.with_payload(seq, EventType.TOOLS_SKIPPED, skipped)

    @classmethod
    def approval_required(cls, seq: int, approval: PendingApproval) -> Event:
        """A call waits for a person's decision: the whole approval, so a crash loses none."""
        asked = ApprovalRequiredData(
            call_id=approval.call_id,
            command=approval.command,
            tool_name=approval.tool_name,
            arguments=dict(approval.arguments),
            tool_type=approval.tool_type,
            requester_id=approval.requester_id,
            turn_seq=approval.turn_seq,
            answers_seq=approval.answers_seq,
        )
        return cls.with_payload(seq, EventType.APPROVAL_REQUIRED, asked)

    @classmethod
    def approval_decision(cls, seq: int, *, call_id: str, decision: ApprovalDecision) -> Event:
        """A person decided on the pending approval (stored by the decision's wire name)."""
        decided = ApprovalDecisionData(call_id=call_id, decision=ApprovalDecision(decision).value)
        return cls.with_payload(seq, EventType.APPROVAL_DECISION, decided)

    @classmethod
    def status_change(cls, seq: int, *, old: str, new: str) -> Event:
        """The session's status changed."""
        return cls.with_payload(seq, EventType.STATUS_CHANGE, StatusChangeData(old=old, new=new))

    @classmethod
    def error(cls, seq: int, *, code: str, message: str) -> Event:
        """Something failed that the operator should be able to see in the log."""
        return cls.with_payload(seq, EventType.ERROR, ErrorData(code=code, message=message))

    @classmethod
    def silent_message(
        cls,
        seq: int,
        *,
        content: str,
        sender_id: str,
        sender_name: str | None = None,
        platform_message_id: str | None = None,
    ) -> Event:
        """Group chatter the agent only listens to (its context buffer, never its history)."""
        chatter = SilentMessageData(
            content=content,
            sender_id=sender_id,
            sender_name=sender_name,
            platform_message_id=platform_message_id,
        )
        return cls.with_payload(seq, EventType.SILENT_MESSAGE, chatter)

    @classmethod
    def steering(cls, seq: int, *, content: str) -> Event:
        """Steering text an ``after_tool`` hook added after a tool call succeeded."""
        return cls.with_payload(seq, EventType.STEERING, SteeringData(content=content))

    @classmethod
    def delivery(cls, seq: int, *, reply_seq: int, target: str, parts: int | None = None) -> Event:
        """The reply with event ``reply_seq`` (its first ``parts`` parts) reached ``target``."""
        delivered = DeliveryData(reply_seq=reply_seq, target=target, parts=parts)
        return cls.with_payload(seq, EventType.DELIVERY, delivered)

    @classmethod
    def summary(
        cls,
        seq: int,
        *,
        round: int,
        summary: str,
        through_seq: int,
        messages: int,
        tokens_before: int,
        tokens_after: int,
        model: str,
        usage: Usage | None = None,
        extractive: bool = False,
    ) -> Event:
        """The oldest ``messages`` of the window were summarised into ``summary`` (round N).

        ``through_seq`` is the newest event those messages came from; the summarised
        messages stay in the log (and the archive): only the model's window changes.
        """
        record = SummaryData(
            round=round,
            summary=summary,
            through_seq=through_seq,
            messages=messages,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            model=model,
            usage=usage.to_dict() if usage else None,
            extractive=extractive,
        )
        return cls.with_payload(seq, EventType.SUMMARY, record)

    @classmethod
    def pin(cls, seq: int, *, pin_id: str, kind: str, text: str, source: str) -> Event:
        """A section present in every request and never summarised."""
        return cls.with_payload(
            seq, EventType.PIN, PinData(pin_id=pin_id, kind=kind, text=text, source=source)
        )

    @classmethod
    def unpin(cls, seq: int, *, pin_id: str) -> Event:
        """The pin ``pin_id`` is no longer sent."""
        return cls.with_payload(seq, EventType.UNPIN, UnpinData(pin_id=pin_id))


_SURROGATE = re.compile("[\ud800-\udfff]")


def _stored(payload: Mapping[str, Any]) -> dict[str, Any]:
    """``payload`` as recorded: ``None`` values left out, lone surrogates replaced."""
    return {k: _clean(v) for k, v in payload.items() if v is not None}


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value
