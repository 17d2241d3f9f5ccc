"""What a turn produced, for every front end: one of four outcomes; how a cut-short one reads.

``TurnResult`` is a closed union a front end ``match``es on, so each outcome carries exactly
the fields it has (an approval has a ``call_id``; a duplicate has no reply) and mypy tells a
front end when it forgot one::

    match result:
        case Complete(content=text): ...          # the reply, already durable
        case AwaitingApproval(call_id=c, command=cmd): ...
        case Duplicate(): ...                      # a redelivered message already answered
        case Failed(content=text): ...             # the failure, recorded; text for the user

``status`` is each outcome's wire name (``complete``, ``awaiting_approval``, ``duplicate``,
``error``), the word HTTP's JSON and SSE already use. ``content`` is the text for the person
on every outcome: a constant ``""`` on the two that carry none (not a field: they cannot be
given text), so code that only shows or checks text reads it off any result.

``steered`` is true on the result a message receives when it joined a turn that was already
running: that turn's caller delivers the reply, so a chat front end must not send it a
second time (``duragent.frontkit``).
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar

from duragent.core.messages import Usage
from duragent.tools.send_file import ReplyFile
from duragent.turns.loop import LoopOutcome

__all__ = [
    "AwaitingApproval",
    "CallOutcome",
    "Complete",
    "Duplicate",
    "Failed",
    "Interruption",
    "TurnResult",
    "copy_result",
    "outcome_result",
    "why_cut_short",
]


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """What became of one tool call of a turn that was cut, as its session recorded it."""

    call_id: str
    name: str
    outcome: str
    """``ran`` (its result is recorded), ``failed`` (the tool's failure is recorded),
    ``interrupted`` (the turn was cut before its result was recorded: it may have run in part
    or in whole; recorded as interrupted) or ``skipped`` (it was not run)."""

    def to_dict(self) -> dict[str, str]:
        """The wire shape (HTTP answers and stream events)."""
        return {"call_id": self.call_id, "name": self.name, "outcome": self.outcome}


@dataclass(frozen=True, slots=True)
class Interruption:
    """A message's turn was cut before the results of its tool calls were recorded.

    Its node stopped, or lost the session to another node (a lease take-over), while the
    calls ran; whoever went on with the session recorded them as interrupted. A client
    whose request was cut must learn that, and what ran, not a bare "duplicate".
    """

    message_seq: int
    """The cut turn's user message (recorded once, whoever served it)."""
    calls: tuple[CallOutcome, ...]
    reply: str | None = None
    """The reply the turn ended with once it went on from the interruption; None when the
    conversation went on without one (a later message's turn answered instead)."""
    message_id: str | None = None
    reply_seq: int | None = None

    def to_dict(self) -> dict[str, object]:
        """The wire shape (``interruption`` of an HTTP reply)."""
        return {
            "message_seq": self.message_seq,
            "tool_calls": [call.to_dict() for call in self.calls],
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class _Outcome:
    session_id: str
    steered: bool = False
    """The caller's message joined a running turn; this is that turn's result."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Complete(_Outcome):
    """The model gave its final reply (durable at ``reply_seq`` before this is returned)."""

    status: ClassVar[str] = "complete"
    content: str
    message_id: str | None = None
    reply_seq: int | None = None
    usage: Usage = field(default_factory=Usage)
    earlier: tuple[str, ...] = ()
    """Replies this turn wrote before ``content``, in order: a message arrived while each was
    being written, so the loop answered again. Durable too; a chat shows them first."""
    interruption: Interruption | None = None
    """Set when this turn went on from one that was cut (the same message sent again after
    its node stopped or lost the session): what became of the cut turn's calls."""
    attachments: tuple[ReplyFile, ...] = ()
    """The files the replies carry (``send_file``), in order, durable with them: a chat
    sends them after the text (``frontkit.delivery``); their bytes are the session's
    attachments, read by ``sha256`` (``TurnRunner.attachments.read``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AwaitingApproval(_Outcome):
    """The turn paused on a tool call a person must decide on (``TurnRunner.approve``)."""

    status: ClassVar[str] = "awaiting_approval"
    content: ClassVar[str] = ""
    call_id: str
    command: str
    usage: Usage = field(default_factory=Usage)
    """The tokens the turn used up to the pause."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Duplicate(_Outcome):
    """A redelivered platform message that was already answered: nothing to send.

    ``interruption`` is set when its turn was cut (a take-over, a crash) before it answered:
    then it was not "answered" as its first sender expects, and an HTTP client is told what
    was recorded instead (the reply the turn went on to write, or that it was interrupted).
    """

    status: ClassVar[str] = "duplicate"
    content: ClassVar[str] = ""
    interruption: Interruption | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Failed(_Outcome):
    """The turn failed (model unreachable, context overflow…); the failure is recorded.

    ``content`` is the sentence for the user; ``error`` is the cause alone.
    """

    status: ClassVar[str] = "error"
    content: str
    error: str
    code: str = "turn_failed"
    """The recorded ``error`` event's code: ``llm_error`` (the model failed),
    ``context_overflow``, ``pins_over_budget`` (the session's pins outgrew their room: the
    person must unpin; retrying cannot help) or ``turn_failed``. Front ends choose their
    status by it (HTTP: 409 for the pins, 502 otherwise)."""


TurnResult = Complete | AwaitingApproval | Duplicate | Failed
"""What ``TurnRunner.run`` and ``TurnRunner.approve`` return."""


def why_cut_short(exc: BaseException) -> str:
    """Why a turn ended early, in words for the model (the cancel message when given)."""
    if isinstance(exc, asyncio.CancelledError):
        message = exc.args[0] if exc.args and isinstance(exc.args[0], str) else ""
        return message or "the turn was cancelled"
    return f"the turn failed ({type(exc).__name__}: {exc})"


def outcome_result(session_id: str, outcome: LoopOutcome) -> Complete | AwaitingApproval:
    """The result of a loop that ended normally (a reply or a pending approval)."""
    if outcome.status == "awaiting_approval":
        assert outcome.call_id is not None  # the loop sets both when it pauses
        assert outcome.command is not None
        return AwaitingApproval(
            session_id=session_id,
            call_id=outcome.call_id,
            command=outcome.command,
            usage=outcome.usage,
        )
    return Complete(
        session_id=session_id,
        content=outcome.content,
        message_id=outcome.message_id,
        reply_seq=outcome.reply_seq,
        usage=outcome.usage,
        earlier=tuple(outcome.earlier),
        attachments=tuple(outcome.attachments),
    )


def copy_result(result: TurnResult, *, steered: bool) -> TurnResult:
    """The running turn's result, handed to a message that steered it."""
    return dataclasses.replace(result, steered=steered)
