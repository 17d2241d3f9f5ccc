"""What a turn produced, for every front end, and how the runner words a turn cut short."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from duragent.core.messages import Usage
from duragent.turns.loop import LoopOutcome

__all__ = ["TurnResult", "copy_result", "outcome_result", "why_cut_short"]


@dataclass(slots=True)
class TurnResult:
    """What a turn produced, for any front end."""

    session_id: str
    status: str  # complete | awaiting_approval | duplicate | error
    content: str = ""
    message_id: str | None = None
    reply_seq: int | None = None
    usage: Usage = field(default_factory=Usage)
    call_id: str | None = None
    command: str | None = None
    error: str | None = None
    steered: bool = False


def why_cut_short(exc: BaseException) -> str:
    """Why a turn ended early, in words for the model (the cancel message when given)."""
    if isinstance(exc, asyncio.CancelledError):
        message = exc.args[0] if exc.args and isinstance(exc.args[0], str) else ""
        return message or "the turn was cancelled"
    return f"the turn failed ({type(exc).__name__}: {exc})"


def outcome_result(session_id: str, outcome: LoopOutcome) -> TurnResult:
    """The result of a loop that ended normally (a reply or a pending approval)."""
    return TurnResult(
        session_id=session_id,
        status=outcome.status,
        content=outcome.content,
        message_id=outcome.message_id,
        reply_seq=outcome.reply_seq,
        usage=outcome.usage,
        call_id=outcome.call_id,
        command=outcome.command,
    )


def copy_result(result: TurnResult, *, steered: bool) -> TurnResult:
    """The running turn's result, handed to a message that steered it."""
    return TurnResult(
        session_id=result.session_id,
        status=result.status,
        content=result.content,
        message_id=result.message_id,
        reply_seq=result.reply_seq,
        usage=result.usage,
        call_id=result.call_id,
        command=result.command,
        error=result.error,
        steered=steered,
    )
