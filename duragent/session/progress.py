"""Where a chat session stands, read as cheaply as possible: for a gateway's recovery at start.

A gateway with thousands of chats must find, at start, the few sessions a crash left
unfinished: a reply written but not delivered, a message recorded but never answered.
Starting every session's actor to ask would read every conversation. The snapshot header
holds the four seqs that answer it (``last_reply_seq``, ``last_delivered_seq``,
``last_user_seq``, ``last_settled_seq``), and it is current when the event log holds nothing
after it — which the log's last line tells (``SessionLog.last_seq``, read from the file's
end). Only a session whose log went on after its snapshot (the ones active when the process
stopped) or whose files cannot be read that way is asked through its actor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from duragent.session.operations import SessionInfo
from duragent.store import SessionStorage, SnapshotCorruptError

__all__ = ["ChatProgress", "progress_from_header", "progress_on_disk"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatProgress:
    """The seqs that tell whether a chat session has something left to do."""

    session_id: str
    agent: str
    gateway: str | None
    chat_id: str | None
    last_reply_seq: int
    last_delivered_seq: int
    last_user_seq: int
    last_settled_seq: int
    last_answered_seq: int
    last_decided_seq: int = 0
    chat_type: str | None = None
    """As the platform said when the session began (None: an older session, or not known)."""

    @property
    def undelivered(self) -> bool:
        """A final reply was written after the last one recorded as delivered."""
        return self.last_reply_seq > self.last_delivered_seq

    @property
    def settled_unsent(self) -> bool:
        """A turn's end after the last reply (an approval request, a failure) not delivered."""
        return self.last_settled_seq > max(self.last_delivered_seq, self.last_reply_seq)

    @property
    def awaits_answer(self) -> bool:
        """A user message came after the last reply, failure or approval request."""
        return self.last_user_seq > self.last_answered_seq

    @property
    def turn_unfinished(self) -> bool:
        """An approval was decided and the turn it let go on never ended.

        No reply, failure or new request came after the decision: a crash stopped it.
        """
        return self.last_decided_seq > self.last_settled_seq

    @classmethod
    def of(cls, info: SessionInfo) -> ChatProgress:
        """From a live actor's summary."""
        return cls(
            session_id=info.session_id,
            agent=info.agent,
            gateway=info.gateway,
            chat_id=info.gateway_chat_id,
            last_reply_seq=info.last_reply_seq,
            last_delivered_seq=info.last_delivered_seq,
            last_user_seq=info.last_user_seq,
            last_settled_seq=info.last_settled_seq,
            last_answered_seq=info.last_answered_seq,
            last_decided_seq=info.last_decided_seq,
            chat_type=info.gateway_chat_type,
        )


def progress_from_header(
    session_id: str, header: Mapping[str, Any], logged_seq: int | None
) -> ChatProgress | None:
    """The progress a snapshot header states, if nothing was logged after it (else None)."""
    if logged_seq is None or logged_seq > int(header.get("last_event_seq") or 0):
        return None
    if "last_settled_seq" not in header:  # written before these seqs were kept
        return None
    config = header.get("config") or {}
    return ChatProgress(
        session_id=session_id,
        agent=str(header.get("agent") or ""),
        gateway=config.get("gateway"),
        chat_id=config.get("gateway_chat_id"),
        last_reply_seq=int(header.get("last_final_reply_seq") or 0),
        last_delivered_seq=int(header.get("last_delivered_seq") or 0),
        last_user_seq=int(header.get("last_user_seq") or 0),
        last_settled_seq=int(header.get("last_settled_seq") or 0),
        last_answered_seq=int(
            header.get("last_answered_seq") or header.get("last_settled_seq") or 0
        ),
        last_decided_seq=int(header.get("last_decided_seq") or 0),
        chat_type=config.get("gateway_chat_type"),
    )


def progress_on_disk(store: SessionStorage, session_id: str) -> ChatProgress | None:
    """Progress from the snapshot header and the log's last seq (None: ask the actor)."""
    try:
        header = store.header(session_id)
    except (OSError, SnapshotCorruptError):  # the actor's load reports it properly
        return None
    if header is None:
        return None
    return progress_from_header(session_id, header, store.event_log(session_id).last_seq())
