"""The session actor: one pykka thread per live session, owning its state and its files.

All of a session's file I/O happens on this thread, so an fsync never blocks the event loop
and many sessions fsync in parallel. Requests arrive as ``bridge.Request`` messages and are
answered through their ``Reply``; an operation that fails answers with its exception and the
actor keeps running.

The durability rules, snapshots and recovery live in ``journal``; this module is the
thread, the dispatch and the operations.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pykka

from duragent.core.events import Event, EventType
from duragent.core.messages import Message, ToolCall, Usage
from duragent.core.snapshot import SessionStatus
from duragent.errors import DuragentError, StorageError
from duragent.session.admission import AskMix
from duragent.session.bridge import Request, SessionUnavailableError
from duragent.session.descriptors import is_out_of_descriptors
from duragent.session.journal import BATCH_SIZE, SNAPSHOT_EVERY, Journal, NewSession
from duragent.session.state import UNFINISHED_RESULT, SessionState
from duragent.store import SessionStore, SnapshotCorruptError

if TYPE_CHECKING:
    from pykka._actor import ActorInbox  # the Protocol pykka types its inbox with

__all__ = [
    "BATCH_SIZE",
    "SNAPSHOT_EVERY",
    "NewSession",
    "SessionActor",
    "SessionInfo",
    "SessionQuarantinedError",
    "UserMessageResult",
]

log = logging.getLogger(__name__)


class SessionQuarantinedError(DuragentError):
    """The session's files could not be trusted; it was moved aside, not resumed empty.

    Raised for every request to it until it is restored (``duragent session restore``).
    """

    def __init__(self, session_id: str, reason: str) -> None:
        self.session_id = session_id
        self.reason = reason
        super().__init__(
            f"session {session_id} is quarantined: {reason}. Its files are kept in "
            f"sessions/_quarantine/{session_id}/; after fixing them, run "
            f"`duragent session restore {session_id}`"
        )


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
    pending_approval: dict[str, Any] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessageResult:
    """Outcome of recording an inbound message."""

    seq: int
    duplicate: bool = False
    answered: bool = False
    agent: str = ""
    """With ``with_context``: the session's agent (else empty)."""
    pending_approval: dict[str, Any] | None = None
    """With ``with_context``: the approval the session is waiting for, if any."""
    messages: list[Message] | None = None
    """With ``with_context``: the Layer 1 window, this message included."""


class SessionActor(pykka.ThreadingActor):
    """Owns one session (see module docstring). Create through ``SessionRegistry``."""

    use_daemon_thread = True

    @staticmethod
    def _create_actor_inbox() -> ActorInbox:
        """A C-level ``SimpleQueue`` instead of pykka's ``queue.Queue``.

        pykka only needs ``put``/``get``/``empty``; ``queue.Queue`` wraps them in Python code
        around a Condition, several GIL round trips per message on the hot path.
        """
        inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        return inbox

    def __init__(
        self,
        store: SessionStore,
        session_id: str,
        *,
        new: NewSession | None = None,
        default_compaction: str = "archive",
        on_change: Callable[[SessionInfo], None] | None = None,
        mix: AskMix | None = None,
    ) -> None:
        super().__init__()
        self._mix = mix
        self._store = store
        self.session_id = session_id
        self._new = new
        self._on_change = on_change
        self._failure: DuragentError | OSError | None = None
        self._closed = False
        self._journal = Journal(
            store,
            session_id,
            default_compaction=default_compaction,
            after_snapshot=self._notify if on_change is not None else None,
        )

    def _notify(self) -> None:
        if self._on_change is not None:
            self._on_change(self.op_info())

    # --- lifecycle ----------------------------------------------------------------------

    def on_start(self) -> None:
        """Create or load the session on the actor's own thread."""
        self._start()

    def _start(self) -> None:
        try:
            if self._new is not None:
                self._journal.create(self._new)
            else:
                self._journal.load()
        except SnapshotCorruptError as exc:
            try:
                self._store.quarantine(self.session_id, str(exc))
            except OSError as move_failed:  # left in place: refused now, checked again later
                self._failure = StorageError(f"quarantining {self.session_id}", move_failed)
                log.error("session %s: %s (%s)", self.session_id, move_failed, exc)
                return
            self._failure = SessionQuarantinedError(self.session_id, str(exc))
        except DuragentError as exc:  # StorageError too: nothing moved; the next start retries
            self._failure = exc
        except Exception as exc:
            if isinstance(exc, OSError) and is_out_of_descriptors(exc):
                # kept as is (errno and all): the registry makes room and retries
                log.info("session %s could not start yet: %s", self.session_id, exc)
                self._failure = exc
                return
            log.exception("session %s failed to start", self.session_id)
            self._failure = DuragentError(f"session {self.session_id} failed to start: {exc}")

    def on_stop(self) -> None:
        """Flush, snapshot, and fail anything still queued for this actor."""
        self._final_write()
        self._fail_queued()

    def _final_write(self) -> None:
        if not self._journal.loaded or self._closed:
            self._journal.close()
            return
        self._closed = True
        try:
            self._journal.snapshot()
        except Exception:
            log.exception("session %s: final flush failed", self.session_id)
        finally:
            self._journal.close()

    def on_failure(self, *_: Any) -> None:
        """Never expected (every op is caught), but never leave callers hanging."""
        self._fail_queued()

    def _fail_queued(self) -> None:
        inbox = self.actor_inbox
        while not inbox.empty():
            envelope = inbox.get()
            message = getattr(envelope, "message", None)
            if isinstance(message, Request) and message.reply is not None:
                message.reply.set_exception(
                    SessionUnavailableError(f"session {self.session_id} stopped")
                )

    def on_receive(self, message: Any) -> Any:
        """Dispatch a ``Request`` to the ``op_<name>`` method and answer it."""
        if not isinstance(message, Request):
            return None
        mix = self._mix
        if mix is None:
            return self._handle(message)
        start, disk = time.perf_counter(), self._journal.io_seconds
        self._handle(message)
        mix.observe(self._journal.io_seconds - disk, time.perf_counter() - start)
        return None

    def _handle(self, message: Request) -> Any:
        try:
            if self._failure is not None and message.op != "stop":
                raise self._failure
            if self._closed:
                raise SessionUnavailableError(f"session {self.session_id} stopped")
            method = getattr(self, f"op_{message.op}")
            result = method(**message.kwargs)
        except BaseException as exc:
            if message.reply is not None:
                message.reply.set_exception(exc)
            elif not isinstance(exc, Exception):
                raise
            else:
                log.exception("session %s: %s failed", self.session_id, message.op)
            return None
        if message.reply is not None:
            message.reply.set_result(result)
        return None

    # --- creation and recovery ------------------------------------------------------------

    # --- internals ----------------------------------------------------------------------

    @property
    def state(self) -> SessionState:
        """The loaded state (only valid after a successful start)."""
        return self._journal.state

    # --- operations (called through bridge.ask) ------------------------------------------

    def op_info(self) -> SessionInfo:
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
            message_count=s.message_count(),
            last_seq=s.last_seq,
            pending_approval=s.pending_approval,
        )

    def op_messages(self) -> list[Message]:
        """The Layer 1 window of messages."""
        return self.state.messages()

    def op_add_user_message(
        self,
        content: str,
        sender_id: str | None = None,
        sender_name: str | None = None,
        platform_message_id: str | None = None,
        with_context: bool = False,
    ) -> UserMessageResult:
        """Durably record an inbound message (a redelivered platform id is not re-added).

        ``with_context`` also returns what a turn starts from (agent, pending approval,
        message window), so a turn costs one round trip to the actor before the model call
        instead of three.
        """
        if platform_message_id:
            seen = self.state.seen_platform_id(platform_message_id)
            if seen is not None:
                answered = seen == 0 or self.state.is_answered(seen)
                if answered or not with_context:
                    return UserMessageResult(seq=seen, duplicate=True, answered=answered)
                self._journal.close_open_calls(UNFINISHED_RESULT)  # a turn resumes it
                self._resume_if_paused()
                return self._with_context(seen, duplicate=True)
        if with_context:  # a new turn: whatever an earlier one left open is over
            self._journal.close_open_calls(UNFINISHED_RESULT, durable=False)  # written below
        seq = self._journal.record(
            Event.user_message(
                self._journal.next_seq(),
                content=content,
                sender_id=sender_id,
                sender_name=sender_name,
                platform_message_id=platform_message_id,
            ),
            durable=True,
        )
        if not with_context:
            return UserMessageResult(seq=seq)
        self._resume_if_paused()
        return self._with_context(seq)

    def _resume_if_paused(self) -> None:
        """A turn starts: a chat paused by a cut-short turn is active again."""
        if self.state.status is SessionStatus.PAUSED and not self.state.pending_approval:
            self.op_set_status(SessionStatus.ACTIVE.value)

    def _with_context(self, seq: int, *, duplicate: bool = False) -> UserMessageResult:
        state = self.state
        return UserMessageResult(
            seq=seq,
            duplicate=duplicate,
            agent=state.agent,
            pending_approval=state.pending_approval,
            messages=state.messages(),
        )

    def op_add_assistant_response(
        self,
        content: str,
        tool_calls: Sequence[ToolCall] = (),
        usage: Usage | None = None,
        message_id: str | None = None,
        budget: dict[str, Any] | None = None,
        durable: bool | None = None,
    ) -> int:
        """Record the model's answer; a final reply (no tool calls) is durable by default."""
        event = Event.assistant_response(
            self._journal.next_seq(),
            agent=self.state.agent,
            content=content,
            tool_calls=tool_calls,
            usage=usage,
            message_id=message_id,
            budget=budget,
        )
        return self._journal.record(event, durable=not tool_calls if durable is None else durable)

    def op_add_tool_result(self, call_id: str, success: bool, content: str) -> int:
        """Record a tool's result (batched; flushed at the end of the turn)."""
        seq = self._journal.next_seq()
        event = Event.tool_result(seq, call_id=call_id, success=success, content=content)
        return self._journal.record(event, durable=False)

    def op_close_open_calls(self, content: str) -> int:
        """Give the calls a cut-short turn left open the result ``content``; write the queue."""
        closed = self._journal.close_open_calls(content)
        self._journal.flush()
        return closed

    def op_add_tools_skipped(self, call_ids: Sequence[str], reason: str) -> int:
        """Record calls that were not run (batched)."""
        event = Event.tools_skipped(self._journal.next_seq(), call_ids=call_ids, reason=reason)
        return self._journal.record(event, durable=False)

    def op_set_status(self, status: str) -> bool:
        """Change the status (durable + snapshot); False when it was already that."""
        new = SessionStatus(status)
        if new is self.state.status:
            return False
        old = self.state.status.value
        self._journal.record(
            Event.status_change(self._journal.next_seq(), old=old, new=new.value), durable=True
        )
        self._journal.snapshot()
        return True

    def op_set_pending_approval(self, approval: dict[str, Any]) -> int:
        """A tool call waits for approval: record it and snapshot (survives restarts)."""
        event = Event.make(
            self._journal.next_seq(),
            EventType.APPROVAL_REQUIRED,
            call_id=approval.get("call_id"),
            command=approval.get("command"),
        )
        seq = self._journal.record(event, durable=True)
        self.state.pending_approval = dict(approval)
        self._journal.snapshot()
        return seq

    def op_resolve_pending_approval(self, call_id: str, decision: str) -> int:
        """Record the decision on the pending approval and clear it (durable + snapshot)."""
        event = Event.make(
            self._journal.next_seq(),
            EventType.APPROVAL_DECISION,
            call_id=call_id,
            decision=decision,
        )
        seq = self._journal.record(event, durable=True)
        self.state.pending_approval = None
        self._journal.snapshot()
        return seq

    def op_record_error(self, code: str, message: str) -> int:
        """Durably record an error the operator should see."""
        return self._journal.record(
            Event.error(self._journal.next_seq(), code=code, message=message), durable=True
        )

    def op_record_delivery(self, reply_seq: int, target: str) -> int:
        """Durably record that the reply ``reply_seq`` was handed to its chat."""
        event = Event.delivery(self._journal.next_seq(), reply_seq=reply_seq, target=target)
        return self._journal.record(event, durable=True)

    def op_is_answered(self, user_seq: int) -> bool:
        """Whether a final reply follows the user message ``user_seq``."""
        return self.state.is_answered(user_seq)

    def op_flush(self) -> int:
        """Write everything queued (end of a turn); returns the last durable seq."""
        self._journal.flush()
        return self.state.last_seq

    def op_snapshot(self) -> None:
        """Flush and write a snapshot now."""
        self._journal.snapshot()

    def op_events(self, after_seq: int = 0, include_archive: bool = False) -> list[Event]:
        """Persisted events after ``after_seq`` (archive first when asked), for history reads."""
        return self._journal.events(after_seq, include_archive)

    def op_stop(self, if_idle: bool = False) -> bool:
        """Flush, snapshot and stop; when this returns the files are final.

        The writes happen here rather than in ``on_stop`` so the caller may start a new actor
        for the same session as soon as the answer arrives, with no writer racing it.
        ``if_idle`` (eviction) refuses, answering False, while a tool call awaits its result:
        a restart would record the call as interrupted.
        """
        if if_idle and self._journal.loaded and self.state.outstanding_call_ids():
            return False
        self._final_write()
        self.stop()
        return True
