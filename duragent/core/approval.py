"""A tool call waiting for a person's decision, and the decisions a person can give.

Plain data shared by the session actor (which keeps the pending approval durable), the
agentic loop (which asks for it and resumes it) and the front ends (which show it and send
the decision). The session's snapshot keeps the approval as a mapping (``to_dict``); these
types are what code passes around instead of that mapping and bare strings.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DECISIONS", "ApprovalDecision", "PendingApproval"]


class ApprovalDecision(enum.StrEnum):
    """What a person decided about a call that waited for approval (the wire names)."""

    ALLOW_ONCE = "allow_once"
    ALLOW_ALWAYS = "allow_always"
    DENY = "deny"


DECISIONS: tuple[str, ...] = tuple(d.value for d in ApprovalDecision)
"""The decisions' wire names, in the order error messages list them."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingApproval:
    """The call a session waits on.

    The ``approval_required`` event holds all of it, so a crash before the snapshot that
    would also hold it loses nothing; an event written before it did (``call_id`` and
    ``command`` only) gets the tool's name and arguments from the call in the history.
    """

    call_id: str
    command: str = ""
    tool_name: str | None = None
    arguments: Mapping[str, Any] = field(default_factory=dict)
    tool_type: str = "bash"
    requester_id: str | None = None
    """Who sent the message whose turn asked (a chat's sender id): only they may decide on
    it from a chat. None: anyone who can reach the session (HTTP, older files)."""
    turn_seq: int | None = None
    """The seq of the person's message whose turn asked: the turn goes on from it once
    decided, without what others wrote meanwhile (``turns.driving``). None: older files (the
    turn goes on from the last person's message before the call)."""
    answers_seq: int | None = None
    """Set when later messages wait for turns of their own (a ``sequential`` chat queue):
    asking answers the turn's messages up to here, not those (as a final reply's
    ``answers_seq``), so a restart still answers them."""
    through_seq: int | None = None
    """The newest message handed to the turn before it asked, when one came after
    ``turn_seq`` (its sender wrote again while it ran, and the loop took it in: the call
    may be for it). The continuation keeps the messages up to here and its reply answers
    them; later ones still get turns of their own. None: ``turn_seq``'s alone."""

    @classmethod
    def of(cls, data: Mapping[str, Any] | None) -> PendingApproval | None:
        """The approval a state's stored mapping holds (None: nothing waits)."""
        return cls.from_dict(data) if data else None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PendingApproval:
        """The approval a snapshot (or the state rebuilt from events) holds."""
        tool_name = data.get("tool_name")
        requester = data.get("requester_id")
        turn_seq = data.get("turn_seq")
        answers_seq = data.get("answers_seq")
        through_seq = data.get("through_seq")
        return cls(
            call_id=str(data.get("call_id", "")),
            command=str(data.get("command", "")),
            tool_name=None if tool_name is None else str(tool_name),
            arguments=dict(data.get("arguments") or {}),
            tool_type=str(data.get("tool_type", "bash")),
            requester_id=None if requester is None else str(requester),
            turn_seq=_seq(turn_seq),
            answers_seq=_seq(answers_seq),
            through_seq=_seq(through_seq),
        )

    def to_dict(self) -> dict[str, Any]:
        """The mapping the snapshot stores (``state.yaml``'s ``pending_approval``).

        ``requester_id``, ``turn_seq``, ``answers_seq`` and ``through_seq`` only when known,
        so an approval without them is written as before.
        """
        out: dict[str, Any] = {
            "call_id": self.call_id,
            "tool_name": self.tool_name,
            "arguments": dict(self.arguments),
            "command": self.command,
            "tool_type": self.tool_type,
        }
        if self.requester_id is not None:
            out["requester_id"] = self.requester_id
        if self.turn_seq is not None:
            out["turn_seq"] = self.turn_seq
        if self.answers_seq is not None:
            out["answers_seq"] = self.answers_seq
        if self.through_seq is not None:
            out["through_seq"] = self.through_seq
        return out


def _seq(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
