"""Read views of the events that record a session's progress rather than its conversation.

Its start, approvals asked and decided, status changes, failures, deliveries, and the memory
beyond the window (summaries, pins). ``core.payloads`` holds the conversation's views, the
event types and the table of which view reads which type; it re-exports these, so readers
import every view from there. Each view: ``of(data)`` reads a payload (a field an older
record lacks reads as the default declared here), ``to_data()`` is the payload as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from duragent.core.payload_fields import (
    as_mapping,
    as_maybe_seq,
    as_maybe_text,
    as_number,
    as_text,
    new_view,
)

__all__ = [
    "ApprovalDecisionData",
    "ApprovalRequiredData",
    "DeliveryData",
    "ErrorData",
    "PinData",
    "SessionEndData",
    "SessionStartData",
    "StatusChangeData",
    "SummaryData",
    "UnpinData",
]


class SessionStartData(NamedTuple):
    """The first event: the agent and the chat the session belongs to."""

    agent: str = ""
    on_disconnect: str = ""
    gateway: str | None = None
    gateway_chat_id: str | None = None
    gateway_chat_type: str | None = None

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> SessionStartData:
        """The view of a ``session_start`` payload."""
        get = data.get
        return cls(
            as_text(get("agent")),
            as_text(get("on_disconnect")),
            as_maybe_text(get("gateway")),
            as_maybe_text(get("gateway_chat_id")),
            as_maybe_text(get("gateway_chat_type")),
        )

    def to_data(self) -> dict[str, Any]:
        """The payload as written."""
        return {
            "agent": self.agent,
            "on_disconnect": self.on_disconnect,
            "gateway": self.gateway,
            "gateway_chat_id": self.gateway_chat_id,
            "gateway_chat_type": self.gateway_chat_type,
        }


class ApprovalRequiredData(NamedTuple):
    """A call waits for a person: ``core.approval.PendingApproval.to_dict`` is the payload.

    Records written before the whole approval was (``call_id`` and ``command`` only) have no
    tool name or arguments: the session takes them from the call in its history.
    """

    call_id: str = ""
    command: str = ""
    tool_name: str | None = None
    arguments: Mapping[str, Any] | None = None
    tool_type: str | None = None
    requester_id: str | None = None
    turn_seq: int | None = None
    answers_seq: int | None = None

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> ApprovalRequiredData:
        """The view of an ``approval_required`` payload."""
        get = data.get
        return cls(
            as_text(get("call_id")),
            as_text(get("command")),
            as_maybe_text(get("tool_name")),
            as_mapping(get("arguments")),
            as_maybe_text(get("tool_type")),
            as_maybe_text(get("requester_id")),
            as_maybe_seq(get("turn_seq")),
            as_maybe_seq(get("answers_seq")),
        )

    def to_data(self) -> dict[str, Any]:
        """The payload as ``PendingApproval.to_dict`` writes it (optional fields if known)."""
        data: dict[str, Any] = {
            "call_id": self.call_id,
            "tool_name": self.tool_name,
            "arguments": self.arguments,
            "command": self.command,
            "tool_type": self.tool_type,
        }
        if self.requester_id is not None:
            data["requester_id"] = self.requester_id
        if self.turn_seq is not None:
            data["turn_seq"] = self.turn_seq
        if self.answers_seq is not None:
            data["answers_seq"] = self.answers_seq
        return data


class ApprovalDecisionData(NamedTuple):
    """A person's decision on the pending approval (the wire name; None if unrecorded)."""

    call_id: str = ""
    decision: str | None = None

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> ApprovalDecisionData:
        """The view of an ``approval_decision`` payload."""
        return cls(as_text(data.get("call_id")), as_maybe_text(data.get("decision")))

    def to_data(self) -> dict[str, Any]:
        """The payload as written."""
        return {"call_id": self.call_id, "decision": self.decision}


class StatusChangeData(NamedTuple):
    """The session's status changed from ``old`` to ``new`` (stored as ``from`` / ``to``)."""

    old: str | None = None
    new: str | None = None

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> StatusChangeData:
        """The view of a ``status_change`` payload."""
        old, new = data.get("from"), data.get("to")
        return new_view(
            cls,
            (
                old if old is None or old.__class__ is str else str(old),
                new if new is None or new.__class__ is str else str(new),
            ),
        )

    def to_data(self) -> dict[str, Any]:
        """The payload as written."""
        return {"from": self.old, "to": self.new}


class ErrorData(NamedTuple):
    """Something failed that the operator should be able to see in the log."""

    code: str = ""
    message: str = ""

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> ErrorData:
        """The view of an ``error`` payload."""
        return cls(as_text(data.get("code")), as_text(data.get("message")))

    def to_data(self) -> dict[str, Any]:
        """The payload as written."""
        return {"code": self.code, "message": self.message}


class SessionEndData(NamedTuple):
    """The reference's end of a session (read only: this version changes the status)."""

    reason: str = ""

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> SessionEndData:
        """The view of a ``session_end`` payload."""
        return cls(as_text(data.get("reason")))

    def to_data(self) -> dict[str, Any]:
        """The payload as the reference writes it."""
        return {"reason": self.reason}


class DeliveryData(NamedTuple):
    """The reply with event ``reply_seq`` was handed to ``target`` (sent once, ever).

    ``parts``: only its first ``parts`` parts were (a reply sent as several messages records
    each but the last as it goes: ``frontkit.delivery``); None, the whole reply. Written only
    when partial, so a whole reply's record is the same as before parts were counted, and an
    older record (without the field) reads as the whole reply it meant.
    """

    reply_seq: int = 0
    target: str = ""
    parts: int | None = None

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> DeliveryData:
        """The view of a ``delivery`` payload."""
        seq, target = data.get("reply_seq"), data.get("target")
        return new_view(
            cls,
            (
                seq if seq.__class__ is int else as_number(seq),
                target if target.__class__ is str else as_text(target),
                as_maybe_seq(data.get("parts")),
            ),
        )

    def to_data(self) -> dict[str, Any]:
        """The payload as written (``parts`` only when partial)."""
        data: dict[str, Any] = {"reply_seq": self.reply_seq, "target": self.target}
        if self.parts is not None:
            data["parts"] = self.parts
        return data


class SummaryData(NamedTuple):
    """The oldest ``messages`` of the window were summarised into ``summary`` (round N).

    ``through_seq`` is the newest event those messages came from; ``extractive``: the text
    was cut from the messages, not written by a model.
    """

    round: int = 0
    summary: str = ""
    through_seq: int = 0
    messages: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    model: str = ""
    usage: Mapping[str, Any] | None = None
    extractive: bool = False

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> SummaryData:
        """The view of a ``summary`` payload."""
        get = data.get
        return cls(
            as_number(get("round")),
            as_text(get("summary")),
            as_number(get("through_seq")),
            as_number(get("messages")),
            as_number(get("tokens_before")),
            as_number(get("tokens_after")),
            as_text(get("model")),
            as_mapping(get("usage")),
            bool(get("extractive")),
        )

    def to_data(self) -> dict[str, Any]:
        """The payload as written (``extractive`` only when true)."""
        return {
            "round": self.round,
            "summary": self.summary,
            "through_seq": self.through_seq,
            "messages": self.messages,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "model": self.model,
            "usage": self.usage,
            "extractive": self.extractive or None,
        }


class PinData(NamedTuple):
    """A section sent with every request and never summarised.

    ``kind``: task, decision or note; ``source``: who pinned it (user, operator or agent).
    The snapshot keeps each pin as this same mapping.
    """

    pin_id: str = ""
    kind: str = "note"
    text: str = ""
    source: str = "user"

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> PinData:
        """The view of a ``pin`` payload (an empty kind or source reads as the default)."""
        get = data.get
        return cls(
            as_text(get("pin_id")),
            as_text(get("kind")) or "note",
            as_text(get("text")),
            as_text(get("source")) or "user",
        )

    def to_data(self) -> dict[str, Any]:
        """The payload as written."""
        return {"pin_id": self.pin_id, "kind": self.kind, "text": self.text, "source": self.source}


class UnpinData(NamedTuple):
    """The pin ``pin_id`` is no longer sent."""

    pin_id: str = ""

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> UnpinData:
        """The view of an ``unpin`` payload."""
        return cls(as_text(data.get("pin_id")))

    def to_data(self) -> dict[str, Any]:
        """The payload as written."""
        return {"pin_id": self.pin_id}
