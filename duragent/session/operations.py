"""What a session actor does once its session is loaded: its operations (``ops.Op``).

Separate from ``actor``, which is the thread itself: how a session is created or loaded,
quarantined when its files cannot be trusted, stopped with a final write, and how a request is
dispatched and answered. These methods hold the conversation's rules instead (what a turn
records, which writes are durable, what a redelivered message does) and run only on the actor's
thread after a successful start, so they touch ``_journal`` without locks.

Each is an ``@op``: a request carries the method (``SessionRegistry.call(sid, SessionOps.info)``);
its decorator says, with the reason beside it, whether the registry may retry it out of
descriptors (``ops``); one declared ``retry_safe=False`` with no reason fails at once there.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from duragent.core.approval import ApprovalDecision, PendingApproval
from duragent.core.attachments import Attachment
from duragent.core.clock import utc_now
from duragent.core.events import Event
from duragent.core.messages import Message, ToolCall, Usage
from duragent.core.payloads import AssistantResponseData, EventType
from duragent.core.snapshot import SessionStatus
from duragent.errors import DuragentError, NotFoundError
from duragent.session.answers import SessionInfo, UserMessageResult, chat_ref
from duragent.session.journal import Journal
from duragent.session.memory_ops import MemoryOps
from duragent.session.ops import op
from duragent.session.state import UNFINISHED_RESULT, SessionState
from duragent.store import AttachmentNotFoundError, SessionStorage
from duragent.tools.send_file import ReplyFile

__all__ = ["SessionEndedError", "SessionInfo", "SessionOps", "UserMessageResult"]


class SessionEndedError(NotFoundError):
    """The session is completed: it takes no new turn (its history stays readable)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(
            f"session {session_id} has ended (status completed): it takes no more "
            "messages; create a new session"
        )


class SessionAgentMismatchError(DuragentError):
    """The session belongs to another agent than the turn named (nothing was written)."""

    def __init__(self, session_id: str, agent: str, expected: str) -> None:
        self.session_id = session_id
        self.agent = agent
        self.expected = expected
        super().__init__(f"session {session_id} belongs to agent {agent!r}, not {expected!r}")


class SessionOps(MemoryOps):
    """The operations of ``SessionActor`` (a mixin: the actor owns ``_journal``).

    ``SessionOps.<name>`` is the ``Op`` a request carries; ``self.<name>(...)`` on the actor's
    thread is a plain call.
    """

    _journal: Journal
    _store: SessionStorage

    @property
    def state(self) -> SessionState:
        """The loaded state (only valid after a successful start)."""
        return self._journal.state

    @op(retry_safe=True, read_only=True)
    def info(self) -> SessionInfo:
        """A summary of the session."""
        s = self.state
        return SessionInfo(
            session_id=s.session_id,
            agent=s.agent,
            status=s.status,
            created_at=s.created_at,
            updated_at=s.updated_at,
            on_disconnect=s.on_disconnect,
            gateway=s.gateway,
            gateway_chat_id=s.gateway_chat_id,
            gateway_chat_type=s.gateway_chat_type,
            message_count=s.message_count(),
            last_seq=s.last_seq,
            pending_approval=PendingApproval.of(s.pending_approval),
            last_delivered_seq=s.last_delivered_seq,
            delivering_seq=s.delivering_seq,
            delivered_parts=s.delivered_parts,
            last_reply_seq=s.last_final_reply_seq,
            last_user_seq=s.last_user_seq,
            last_settled_seq=s.last_settled_seq,
            last_answered_seq=s.last_answered_seq,
            last_decided_seq=s.last_decided_seq,
            tokens_day=s.tokens_day,
            tokens_today=s.tokens_today,
        )

    @op(retry_safe=True, read_only=True)
    def messages(self) -> list[Message]:
        """The Layer 1 window of messages."""
        return self.state.messages()

    @op(retry_safe=True, read_only=True)
    def paused_turn(
        self, call_id: str, turn_seq: int | None, through_seq: int | None = None
    ) -> tuple[Any, ...]:
        """The window split for a paused turn's continuation (``SessionState.paused_turn``)."""
        return self.state.paused_turn(call_id, turn_seq, through_seq)

    @op(retry_safe=True)  # a durable write: withdrawn when it fails
    def add_user_message(
        self,
        content: str,
        sender_id: str | None = None,
        sender_name: str | None = None,
        platform_message_id: str | None = None,
        with_context: bool = False,
        passive: bool = False,
        agent: str | None = None,
        attachments: Sequence[Attachment] = (),
    ) -> UserMessageResult:
        """Durably record an inbound message (a redelivered platform id is not re-added).

        ``with_context`` also returns what a turn starts from (agent, pending approval,
        message window), so a turn costs one round trip to the actor before the model call
        instead of three. A ``passive`` message is owed no answer: a restart's recovery does
        not answer it and it does not keep the session from its TTL. ``agent``: the agent
        the caller expects the session to be of (the OpenAI endpoint's ``model``); another
        raises ``SessionAgentMismatchError`` before anything is written. ``attachments``: what
        the message carried, recorded in the same event (durable with it, or not at all);
        their bytes must be stored first (``SessionStorage.attachments``), or
        ``AttachmentNotFoundError`` is raised before anything is written, so no event ever
        names a blob that is not there.
        """
        if with_context and self.state.status is SessionStatus.COMPLETED:
            raise SessionEndedError(self.state.session_id)  # before anything is written
        if agent is not None and agent != self.state.agent:
            raise SessionAgentMismatchError(self.state.session_id, self.state.agent, agent)
        if platform_message_id:
            seen = self.state.seen_platform_id(platform_message_id)
            if seen is not None:
                answered = seen == 0 or self.state.is_answered(seen)
                if answered or not with_context:
                    return UserMessageResult(seq=seen, duplicate=True, answered=answered)
                self._journal.close_open_calls(UNFINISHED_RESULT)  # a turn resumes it
                self._resume_if_paused()
                return self._with_context(seen, duplicate=True)
        if attachments:
            self._check_stored(attachments)
        if with_context:  # a new turn: whatever an earlier one left open is over
            self._journal.close_open_calls(UNFINISHED_RESULT, durable=False)  # written below
        seq = self._journal.record(
            Event.user_message(
                self._journal.next_seq(),
                content=content,
                sender_id=sender_id,
                sender_name=sender_name,
                platform_message_id=platform_message_id,
                passive=passive,
                attachments=attachments,
            ),
            durable=True,
        )
        if not with_context:
            return UserMessageResult(seq=seq)
        self._resume_if_paused()
        return self._with_context(seq)

    def _check_stored(self, attachments: Sequence[Attachment]) -> None:
        """Raise ``AttachmentNotFoundError`` for the first attachment whose bytes are not stored."""
        blobs = self._store.attachments(self.state.session_id)
        for attachment in attachments:
            if not blobs.has(attachment.sha256):
                raise AttachmentNotFoundError(attachment.sha256, self.state.session_id)

    @op(retry_safe=True)  # closes only calls still open
    def turn_context(self, seq: int) -> UserMessageResult:
        """What a turn for messages already recorded (up to ``seq``) starts from.

        The same preparation as a turn for a new message, without recording one: calls an
        earlier turn left open are closed, a paused chat is active again. A chat queue records
        messages the moment they arrive and runs their turn later (``TurnRunner.answer``).
        """
        self._journal.close_open_calls(UNFINISHED_RESULT)
        self._resume_if_paused()
        return self._with_context(seq, duplicate=True)

    def _resume_if_paused(self) -> None:
        """A turn starts: a chat paused by a cut-short turn is active again."""
        if self.state.status is SessionStatus.PAUSED and not self.state.pending_approval:
            self.set_status(SessionStatus.ACTIVE)

    def _with_context(self, seq: int, *, duplicate: bool = False) -> UserMessageResult:
        state = self.state
        return UserMessageResult(
            seq=seq,
            duplicate=duplicate,
            agent=state.agent,
            on_disconnect=state.on_disconnect,
            pending_approval=PendingApproval.of(state.pending_approval),
            messages=state.messages(),
            memory=self.memory(),
            chat=chat_ref(state.gateway, state.gateway_chat_id, state.gateway_chat_type),
            tokens_day=state.tokens_day,
            tokens_today=state.tokens_today,
        )

    @op(retry_safe=True)  # durable: withdrawn when it fails; batched: kept queued
    def add_assistant_response(
        self,
        content: str,
        tool_calls: Sequence[ToolCall] = (),
        usage: Usage | None = None,
        message_id: str | None = None,
        budget: dict[str, Any] | None = None,
        durable: bool | None = None,
        answers_seq: int | None = None,
        attachments: Sequence[ReplyFile] = (),
    ) -> int:
        """Record the model's answer; a final reply (no tool calls) is durable by default."""
        if attachments:  # the files a final reply carries (``send_file``): stored first
            self._check_stored([file.attachment for file in attachments])
        event = Event.assistant_response(
            self._journal.next_seq(),
            agent=self.state.agent,
            content=content,
            tool_calls=tool_calls,
            usage=usage,
            message_id=message_id,
            budget=budget,
            answers_seq=answers_seq,
        )
        if attachments:
            records = [file.to_data() for file in attachments]
            view = AssistantResponseData.of(event.data)._replace(attachments=records)
            event = Event.with_payload(event.seq, EventType.ASSISTANT_RESPONSE, view)
        return self._journal.record(event, durable=not tool_calls if durable is None else durable)

    @op(retry_safe=False)
    def add_tool_result(self, call_id: str, success: bool, content: str) -> int:
        """Record a tool's result (batched; flushed at the end of the turn)."""
        seq = self._journal.next_seq()
        event = Event.tool_result(seq, call_id=call_id, success=success, content=content)
        return self._journal.record(event, durable=False)

    @op(retry_safe=False)
    def add_steering(self, content: str) -> int:
        """Record an ``after_tool`` hook's steering text (batched, like the result before it)."""
        event = Event.steering(self._journal.next_seq(), content=content)
        return self._journal.record(event, durable=False)

    @op(retry_safe=False)
    def close_open_calls(self, content: str) -> int:
        """Give the calls a cut-short turn left open the result ``content``; write the queue."""
        closed = self._journal.close_open_calls(content)
        self._journal.flush()
        return closed

    @op(retry_safe=False)
    def add_tools_skipped(self, call_ids: Sequence[str], reason: str) -> int:
        """Record calls that were not run (batched)."""
        event = Event.tools_skipped(self._journal.next_seq(), call_ids=call_ids, reason=reason)
        return self._journal.record(event, durable=False)

    @op(retry_safe=True, ends_session=True)  # idempotent
    def set_status(self, status: SessionStatus) -> bool:
        """Change the status (durable + snapshot); False when it was already that."""
        new = SessionStatus(status)  # a name read from an old caller or a file is checked too
        if new is self.state.status:
            return False
        old = self.state.status.value
        self._journal.record(
            Event.status_change(self._journal.next_seq(), old=old, new=new.value), durable=True
        )
        self._journal.snapshot()
        return True

    @op(retry_safe=True, ends_session=True)  # idempotent
    def expire_if_idle(self, ttl_hours: float) -> bool:
        """Complete the session if it has been idle ``ttl_hours``; True when it is completed.

        Judged here, between two of the session's own operations and on its replayed state:
        a listing header can be older than the log (a crash since the last snapshot), and a
        message recorded between a sweep's look and its write would be cut off. A user
        message still owed its answer gets one more TTL: its turn may be queued or running
        (a chat's recovery after a long outage), and ending the session then would lose a
        message already accepted; but a turn nobody runs any more (an HTTP client gone with
        the process that served it) must not keep the session forever. Already completed
        counts as completed (a retry after the write succeeded).
        """
        state = self.state
        if state.status is SessionStatus.COMPLETED:
            return True
        owed = state.last_user_seq > state.last_answered_seq
        if not idle_past(state.updated_at, utc_now(), ttl_hours * (2 if owed else 1)):
            return False
        return self.set_status(SessionStatus.COMPLETED)

    @op(retry_safe=False)  # an event, then a snapshot: a retry could repeat the event
    def set_pending_approval(self, approval: PendingApproval) -> int:
        """A tool call waits for approval: record it and snapshot (survives restarts)."""
        # the whole approval, not just what a client shows: a crash between this event and
        # the snapshot must leave a call that still runs once approved
        event = Event.approval_required(self._journal.next_seq(), approval)
        seq = self._journal.record(event, durable=True)
        self.state.pending_approval = approval.to_dict()
        self._journal.snapshot()
        return seq

    @op(retry_safe=False)  # an event, then a snapshot, like setting it
    def resolve_pending_approval(self, call_id: str, decision: ApprovalDecision) -> int:
        """Record the decision on the pending approval and clear it (durable + snapshot)."""
        event = Event.approval_decision(
            self._journal.next_seq(), call_id=call_id, decision=decision
        )
        seq = self._journal.record(event, durable=True)
        self.state.pending_approval = None
        self._journal.snapshot()
        return seq

    @op(retry_safe=True)  # a durable write: withdrawn when it fails
    def record_error(self, code: str, message: str) -> int:
        """Durably record an error the operator should see."""
        return self._journal.record(
            Event.error(self._journal.next_seq(), code=code, message=message), durable=True
        )

    @op(retry_safe=True)  # idempotent
    def record_delivery(self, reply_seq: int, target: str, parts: int | None = None) -> int | None:
        """Durably record reply ``reply_seq`` (its first ``parts``; None: all) as sent, once."""
        if not self.state.delivery_news(reply_seq, parts):
            return None
        seq = self._journal.next_seq()
        event = Event.delivery(seq, reply_seq=reply_seq, target=target, parts=parts)
        return self._journal.record(event, durable=True)

    @op(retry_safe=True)  # a durable write: withdrawn when it fails
    def add_silent_message(
        self,
        content: str,
        sender_id: str,
        sender_name: str | None = None,
        platform_message_id: str | None = None,
    ) -> int | None:
        """Durably keep group chatter in the context buffer (never in the messages).

        None (nothing written) when the buffer already holds ``platform_message_id``: a
        platform redelivering an update must not make the chatter appear twice.
        """
        if platform_message_id and self.state.buffered_platform_id(platform_message_id):
            return None
        event = Event.silent_message(
            self._journal.next_seq(),
            content=content,
            sender_id=sender_id,
            sender_name=sender_name,
            platform_message_id=platform_message_id,
        )
        return self._journal.record(event, durable=True)

    @op(retry_safe=True, read_only=True)
    def recent_silent(self, max_messages: int, max_age_hours: float) -> list[str]:
        """The buffered chatter a trigger injects: ≤ ``max_messages``, ≤ ``max_age_hours`` old.

        Read, not taken: the buffer keeps its entries (as the reference does), so a later
        mention within the age limit sees the same chatter again.
        """
        return self.state.recent_silent(max_messages, timedelta(hours=max_age_hours), utc_now())

    @op(retry_safe=True)  # a failed write keeps the queue: nothing is written twice
    def flush(self) -> int:
        """Write everything queued (end of a turn); returns the last durable seq."""
        self._journal.flush()
        return self.state.last_seq

    @op(retry_safe=True)  # the same: the queue, then the state as it is
    def snapshot(self) -> None:
        """Flush and write a snapshot now."""
        self._journal.snapshot()

    @op(retry_safe=True, read_only=True)
    def events(self, after_seq: int = 0, include_archive: bool = False) -> list[Event]:
        """Persisted events after ``after_seq`` (archive first when asked), for history reads."""
        return self._journal.events(after_seq, include_archive)


def idle_past(updated_at: str, now: datetime, ttl_hours: float) -> bool:
    """Whether ``updated_at`` (RFC 3339) is at least ``ttl_hours`` before ``now``."""
    try:
        updated = datetime.fromisoformat(updated_at.replace("Z", "+00:00"))
    except ValueError:
        return False
    return (now - updated).total_seconds() >= ttl_hours * 3600
