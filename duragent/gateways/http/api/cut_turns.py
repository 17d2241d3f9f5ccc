"""What an HTTP client is told about a turn that was cut: its recorded outcome, never a guess.

A turn is cut when the node running it stops, or loses the session to another node (its
lease ran out while it stalled, and another node took the session over: ``cluster.forwarding``).
Its message is recorded once, under its key (``sessions.message_key``); whoever goes on with
the session records the calls left open as interrupted. Each client of that message then
gets what was recorded (``duragent.turns.Interruption``):

- the turn went on from the interruption and replied: ``200`` with that reply (the normal
  reply shape) plus ``interruption`` (``message_seq``, ``tool_calls`` with each call's
  ``outcome``);
- the conversation went on without an answer to it (a later message's turn answered):
  ``409`` problem+json with ``code: "turn_interrupted"``, ``message_recorded``,
  ``message_seq`` and ``tool_calls`` — never ``{"status": "duplicate"}``, which is kept for a
  message that really was answered;
- a stream cut on the node that lost the session ends with an ``error`` event carrying the
  same members and the ``idempotency_key`` under which sending the message again (to any
  node) gives its recorded outcome.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from duragent.errors import StorageError
from duragent.gateways.http.server.problem import ProblemError
from duragent.store import FencedWriteError, LeaseHeldError
from duragent.turns import CallOutcome, Interruption

__all__ = [
    "TURN_INTERRUPTED",
    "interrupted_detail",
    "interrupted_fields",
    "interrupted_problem",
    "lost_to",
    "reply_body",
    "taken_over_detail",
]

TURN_INTERRUPTED = "turn_interrupted"
"""The ``code`` of an answer saying a message's turn was interrupted."""


def reply_body(
    message_id: str | None,
    content: str,
    interruption: Interruption | None,
    attachments: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """``POST …/messages``' reply shape, with ``interruption`` when the turn was cut.

    ``attachments``: the files the reply carries (``attachments.reply_file_views``), only
    when it has some: a client that knows nothing of them sees the shape it always saw.
    """
    body: dict[str, Any] = {"message_id": message_id, "role": "assistant", "content": content}
    if interruption is not None:
        body["interruption"] = interruption.to_dict()
    if attachments:
        body["attachments"] = [dict(item) for item in attachments]
    return body


def _names(calls: Sequence[CallOutcome], *outcomes: str) -> str:
    chosen = [f"{c.name or 'a tool'} (call {c.call_id})" for c in calls if c.outcome in outcomes]
    return ", ".join(chosen) or "none"


def interrupted_detail(interruption: Interruption) -> str:
    """The sentence a client reads when a message's turn was cut and never answered."""
    calls = interruption.calls
    return (
        "The turn of this message was interrupted before it answered: the node running it "
        "stopped or lost the session to another node (a lease take-over) while its tool calls "
        f"ran. Interrupted (no result recorded; it may have run in part or in whole): "
        f"{_names(calls, 'interrupted')}. Ran: {_names(calls, 'ran', 'failed')}. The message "
        f"is recorded once (seq {interruption.message_seq}) and the conversation went on "
        "without an answer to it: send a new message to continue (sending this one again "
        "gives this answer again)."
    )


def interrupted_fields(interruption: Interruption) -> dict[str, Any]:
    """The members every "interrupted" answer carries (problem extension, stream event)."""
    return {
        "code": TURN_INTERRUPTED,
        "message_recorded": True,
        "message_seq": interruption.message_seq,
        "tool_calls": [call.to_dict() for call in interruption.calls],
    }


def interrupted_problem(session_id: str, interruption: Interruption) -> ProblemError:
    """The 409 for a message whose turn was cut and never answered."""
    extra = {"session_id": session_id, **interrupted_fields(interruption)}
    return ProblemError(409, interrupted_detail(interruption), extra=extra)


def lost_to(exc: BaseException) -> str | None:
    """The node that took the session over, if ``exc`` says this node lost it ("" unknown).

    None when ``exc`` is no take-over. A turn learns it by a write the lease fence refused
    (``FencedWriteError``, possibly wrapped after its message was recorded) or by finding
    another node's live lease when its actor had been stopped for the loss
    (``LeaseHeldError``).
    """
    if isinstance(exc, StorageError) and isinstance(exc.__cause__, FencedWriteError):
        exc = exc.__cause__
    if isinstance(exc, LeaseHeldError):
        return exc.owner
    if isinstance(exc, FencedWriteError):
        return exc.owner or ""
    return None


def taken_over_detail(
    owner: str, calls: Mapping[str, CallOutcome], key: str | None, *, recorded: bool
) -> str:
    """What a stream cut on the node that lost its session says (see module docstring).

    The calls are as this node saw them: ``ran`` once their result came here, though a
    result not yet saved when the session was lost is not recorded (whoever went on records
    the call as interrupted); sending the message again gives what was recorded.
    """
    by = f"node {owner}" if owner else "another node"
    listed = list(calls.values())
    if recorded:
        again = (
            f"Your message is recorded: send it again with Idempotency-Key: {key} (to any "
            "node) to get its recorded outcome"
            if key
            else "Your message is recorded: its outcome will be in GET …/messages"
        )
    else:
        again = "Your message may not be recorded: send it again"
        again += f" with Idempotency-Key: {key} (it is recorded once)" if key else ""
    return (
        f"This turn was interrupted: this node lost the session to {by} (a lease take-over: "
        "it stalled past its lease) while the turn ran, so nothing it did after its last save "
        f"is recorded. Interrupted here: {_names(listed, 'interrupted')}. Ran here (a result "
        f"not saved before the take-over is recorded as interrupted): "
        f"{_names(listed, 'ran', 'failed')}. {again}."
    )
