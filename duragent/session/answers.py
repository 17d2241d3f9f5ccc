"""What a session's operations answer: a session's summary and a recorded message's outcome.

``SessionInfo`` (``SessionOps.info``) and ``UserMessageResult`` (``add_user_message``,
``turn_context``) are frozen data handed back across the actor's boundary, read by the
handle, listings and progress without the rules that produced them; those rules are
``operations``, which still names both types.
"""

from __future__ import annotations

from dataclasses import dataclass

from duragent.core.approval import PendingApproval
from duragent.core.caller import ChatRef
from duragent.core.messages import Message
from duragent.core.snapshot import SessionStatus
from duragent.session.memory_ops import MemoryView

__all__ = ["SessionInfo", "UserMessageResult", "chat_ref"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionInfo:
    """A read-only summary of a session."""

    session_id: str
    agent: str
    status: SessionStatus
    created_at: str
    updated_at: str
    on_disconnect: str
    gateway: str | None
    gateway_chat_id: str | None
    message_count: int
    last_seq: int
    pending_approval: PendingApproval | None
    last_delivered_seq: int = 0
    """The newest reply a chat front end recorded as handed to its chat (0: none)."""
    delivering_seq: int = 0
    delivered_parts: int = 0
    """The reply after ``last_delivered_seq`` delivered part-way, and how many of its parts
    reached the chat (0, 0: none is part-way; see ``SessionSnapshot``)."""
    gateway_chat_type: str | None = None
    """The chat's type as its platform said when the session began (None: not known)."""
    last_reply_seq: int = 0
    """The newest final reply (an assistant message without tool calls; 0: none)."""
    last_user_seq: int = 0
    """The newest user message owed an answer (0: none; a passive one is not)."""
    last_settled_seq: int = 0
    """The newest final reply, recorded failure or approval request (0: none)."""
    last_answered_seq: int = 0
    """The newest user message a turn's end answered (see ``SessionSnapshot``)."""
    last_decided_seq: int = 0
    """The newest decision on an approval (see ``SessionSnapshot``)."""
    tokens_day: str = ""
    """The UTC day ``tokens_today`` counts (see ``SessionSnapshot``)."""
    tokens_today: int = 0
    """Model tokens the session's calls used on ``tokens_day``."""

    @property
    def chat(self) -> ChatRef | None:
        """The chat the session belongs to (None: an HTTP, CLI or task session)."""
        return chat_ref(self.gateway, self.gateway_chat_id, self.gateway_chat_type)

    def parts_delivered(self, reply_seq: int) -> int | None:
        """How many parts of reply ``reply_seq`` reached the chat (None: all of it)."""
        if reply_seq <= self.last_delivered_seq:
            return None
        return self.delivered_parts if reply_seq == self.delivering_seq else 0

    @property
    def awaits_answer(self) -> bool:
        """A user message was recorded after the last one a turn's end answered.

        What a crash between accepting a message and answering it leaves behind (a chat's
        recovery runs its turn), and what a message a running turn did not see leaves.
        """
        return self.last_user_seq > self.last_answered_seq


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessageResult:
    """Outcome of recording an inbound message."""

    seq: int
    duplicate: bool = False
    answered: bool = False
    agent: str = ""
    """With ``with_context``: the session's agent (else empty)."""
    on_disconnect: str = ""
    """With ``with_context``: what a streaming client that leaves does to the turn
    (``pause`` or ``continue``; else empty), so a stream learns it from this round trip."""
    pending_approval: PendingApproval | None = None
    """With ``with_context``: the approval the session is waiting for, if any."""
    messages: list[Message] | None = None
    """With ``with_context``: the Layer 1 window, this message included."""
    memory: MemoryView | None = None
    """With ``with_context``: the summary, pins and task (the summaries tier's block)."""
    chat: ChatRef | None = None
    """With ``with_context``: the chat the session belongs to (who the turn acts for)."""
    tokens_day: str = ""
    tokens_today: int = 0
    """With ``with_context``: the session's model tokens of the day (the chat's quota)."""


def chat_ref(gateway: str | None, chat_id: str | None, kind: str | None) -> ChatRef | None:
    """The chat a session belongs to, from its fields (None: an HTTP, CLI or task session)."""
    return None if gateway is None or chat_id is None else ChatRef(gateway, chat_id, kind)
