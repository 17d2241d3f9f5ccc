"""The session actor: one pykka thread per live session, owning its state and its files.

All of a session's file I/O happens on this thread, so an fsync never blocks the event loop
and many sessions fsync in parallel. Requests arrive as ``bridge.Request`` messages and are
answered through their ``Reply``; an operation that fails answers with its exception and the
actor keeps running.

Durability: operations marked *durable* (user message, final reply, status changes, approval
changes, errors, deliveries) are written and fsync'd before they are acknowledged; if the write
fails the event is withdrawn (its seq is reused), the state is unchanged, and the caller gets
the error. Batched operations (tool results inside a turn) are applied at once and written
with the next flush; a failed flush keeps them queued in order and retries, so ``seq`` has no
gaps or duplicates. A snapshot is written on status and approval changes, when the actor
stops, and otherwise once at least ``SNAPSHOT_EVERY`` events *and* a quarter of the last
snapshot's size have been appended since the last one: a long conversation's state.yaml is
large, and rewriting it every 50 small events would make each event cost a rewrite of the
whole window (write amplification stays ≤ ~4×; recovery replays at most that quarter).
After a snapshot, events up to ``checkpoint_seq`` are compacted per the session's mode.
"""

from __future__ import annotations

import logging
import queue
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pykka

from duragent.core.events import Event, EventType, now_rfc3339
from duragent.core.messages import Message, ToolCall, Usage
from duragent.core.snapshot import SessionSnapshot, SessionStatus
from duragent.errors import DuragentError
from duragent.session.bridge import Request, SessionUnavailableError
from duragent.session.state import INTERRUPTED_RESULT, SessionState
from duragent.store import EventLog, SessionStore, SnapshotCorruptError, SnapshotFile

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

BATCH_SIZE = 10
SNAPSHOT_EVERY = 50


class SessionQuarantinedError(DuragentError):
    """The session's files could not be read; it was moved aside, not resumed empty."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NewSession:
    """What a brand-new session starts with."""

    agent: str
    on_disconnect: str = "pause"
    gateway: str | None = None
    gateway_chat_id: str | None = None
    message_limit: int = 1000
    compaction: str | None = None


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
    ) -> None:
        super().__init__()
        self._store = store
        self.session_id = session_id
        self._new = new
        self._default_compaction = default_compaction
        self._on_change = on_change
        self._state: SessionState | None = None
        self._failure: DuragentError | None = None
        self._queue: list[Event] = []
        self._log: EventLog = store.event_log(session_id)
        self._snapshots: SnapshotFile = store.snapshot(session_id)
        self._last_snapshot_seq = 0
        self._bytes_at_snapshot = 0
        self._closed = False

    # --- lifecycle ----------------------------------------------------------------------

    def on_start(self) -> None:
        """Create or load the session on the actor's own thread."""
        self._start()

    def _start(self) -> None:
        try:
            if self._new is not None:
                self._create(self._new)
            else:
                self._load()
        except SnapshotCorruptError as exc:
            self._store.quarantine(self.session_id, str(exc))
            self._failure = SessionQuarantinedError(
                f"session {self.session_id} could not be loaded and was quarantined: {exc.reason}"
            )
        except DuragentError as exc:
            self._failure = exc
        except Exception as exc:
            log.exception("session %s failed to start", self.session_id)
            self._failure = DuragentError(f"session {self.session_id} failed to start: {exc}")

    def on_stop(self) -> None:
        """Flush, snapshot, and fail anything still queued for this actor."""
        self._final_write()
        self._fail_queued()

    def _final_write(self) -> None:
        if self._state is None or self._closed:
            self._log.close()
            return
        self._closed = True
        try:
            self._snapshot()
        except Exception:
            log.exception("session %s: final flush failed", self.session_id)
        finally:
            self._log.close()

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
        return self._handle(message)

    def _handle(self, message: Request) -> Any:
        try:
            if self._failure is not None:
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

    def _create(self, new: NewSession) -> None:
        now = now_rfc3339()
        self._store.create(self.session_id)
        snapshot = SessionSnapshot(
            session_id=self.session_id,
            agent=new.agent,
            created_at=now,
            updated_at=now,
            on_disconnect=new.on_disconnect,
            gateway=new.gateway,
            gateway_chat_id=new.gateway_chat_id,
            actor_message_limit=new.message_limit,
            compaction=new.compaction,
        )
        self._state = SessionState(snapshot)
        self._record(
            Event.session_start(
                1,
                agent=new.agent,
                on_disconnect=new.on_disconnect,
                gateway=new.gateway,
                gateway_chat_id=new.gateway_chat_id,
            ),
            durable=True,
        )
        self._snapshot()

    def _load(self) -> None:
        self._remove_stale_temp_files()
        snapshot = self._snapshots.read()
        if snapshot is None:
            events, _ = self._log.read(0)
            first = events[0] if events else None
            if first is None or first.type != EventType.SESSION_START:
                raise SnapshotCorruptError(self._snapshots.path, "no snapshot and no log start")
            now = first.timestamp or now_rfc3339()
            snapshot = SessionSnapshot(
                session_id=self.session_id,
                agent=str(first.data.get("agent", "")),
                created_at=now,
                updated_at=now,
            )
        state = SessionState(snapshot)
        events, report = self._log.read(snapshot.replay_from_seq)
        if not report.clean:
            log.warning(
                "session %s log: %d malformed, %d duplicate, torn tail %s, gaps %s",
                self.session_id,
                report.skipped_malformed,
                report.skipped_duplicates,
                report.torn_tail,
                report.gaps,
            )
        for event in events:
            state.apply(event)
        self._state = state
        self._last_snapshot_seq = snapshot.last_event_seq
        self._repair_after_crash(state)

    def _remove_stale_temp_files(self) -> None:
        """Temp files of writes a crash interrupted (their targets were never replaced)."""
        for stale in self._snapshots.directory.glob("*.tmp"):
            try:
                stale.unlink()
            except OSError as exc:
                log.warning("could not remove %s: %s", stale, exc)

    def _repair_after_crash(self, state: SessionState) -> None:
        """Persist results for interrupted tool calls; settle a status left 'running'."""
        repaired = False
        for call_id in state.outstanding_call_ids():
            self._record(
                Event.tool_result(
                    self._next_seq(), call_id=call_id, success=False, content=INTERRUPTED_RESULT
                ),
                durable=False,
            )
            repaired = True
        if state.status is SessionStatus.RUNNING:
            target = (
                SessionStatus.ACTIVE if state.on_disconnect == "continue" else SessionStatus.PAUSED
            )
            self._record(
                Event.status_change(self._next_seq(), old=state.status.value, new=target.value),
                durable=False,
            )
            repaired = True
        if repaired:
            self._flush()
            self._snapshot()

    # --- internals ----------------------------------------------------------------------

    @property
    def state(self) -> SessionState:
        """The loaded state (only valid after a successful start)."""
        assert self._state is not None
        return self._state

    def _next_seq(self) -> int:
        queued = self._queue[-1].seq if self._queue else self.state.last_seq
        return max(queued, self.state.last_seq) + 1

    def _record(self, event: Event, *, durable: bool) -> int:
        """Queue ``event``; durable events are written before they change the state."""
        self._queue.append(event)
        if durable:
            try:
                self._write_queue()
            except BaseException:
                if self._queue and self._queue[-1] is event:
                    self._queue.pop()  # withdrawn: seq will be reused, state untouched
                raise
            self.state.apply(event)
        else:
            self.state.apply(event)
            if len(self._queue) >= BATCH_SIZE:
                try:
                    self._write_queue()
                except OSError as exc:
                    log.error("session %s: write failed, will retry: %s", self.session_id, exc)
        self._maybe_snapshot()
        return event.seq

    def _write_queue(self) -> None:
        """Append and fsync everything queued; on failure the queue keeps it all, in order."""
        if not self._queue:
            return
        batch = list(self._queue)
        self._log.append(batch)
        del self._queue[: len(batch)]

    def _maybe_snapshot(self) -> None:
        if self._queue or self.state.last_seq - self._last_snapshot_seq < SNAPSHOT_EVERY:
            return
        if self._log.appended_bytes - self._bytes_at_snapshot < self._snapshots.last_size // 4:
            return
        try:
            self._snapshot()
        except OSError as exc:  # the log has everything; the next snapshot will catch up
            log.error("session %s: snapshot failed: %s", self.session_id, exc)

    def _flush(self) -> None:
        self._write_queue()
        self._maybe_snapshot()

    def _snapshot(self) -> None:
        self._write_queue()
        state = self.state
        self._snapshots.write(state.to_snapshot(now_rfc3339()))
        self._last_snapshot_seq = state.last_seq
        self._bytes_at_snapshot = self._log.appended_bytes
        mode = state.compaction or self._default_compaction
        if state.checkpoint_seq > 0 and mode != "disabled":
            try:
                self._log.compact(state.checkpoint_seq, archive=mode == "archive")
            except OSError as exc:
                log.error("session %s: compaction failed: %s", self.session_id, exc)
        if self._on_change is not None:
            self._on_change(self.op_info())

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
    ) -> UserMessageResult:
        """Durably record an inbound message (a redelivered platform id is not re-added)."""
        if platform_message_id:
            seen = self.state.seen_platform_id(platform_message_id)
            if seen is not None:
                return UserMessageResult(
                    seq=seen, duplicate=True, answered=seen == 0 or self.state.is_answered(seen)
                )
        seq = self._record(
            Event.user_message(
                self._next_seq(),
                content=content,
                sender_id=sender_id,
                sender_name=sender_name,
                platform_message_id=platform_message_id,
            ),
            durable=True,
        )
        return UserMessageResult(seq=seq)

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
            self._next_seq(),
            agent=self.state.agent,
            content=content,
            tool_calls=tool_calls,
            usage=usage,
            message_id=message_id,
            budget=budget,
        )
        return self._record(event, durable=not tool_calls if durable is None else durable)

    def op_add_tool_result(self, call_id: str, success: bool, content: str) -> int:
        """Record a tool's result (batched; flushed at the end of the turn)."""
        seq = self._next_seq()
        event = Event.tool_result(seq, call_id=call_id, success=success, content=content)
        return self._record(event, durable=False)

    def op_add_tools_skipped(self, call_ids: Sequence[str], reason: str) -> int:
        """Record calls that were not run (batched)."""
        event = Event.tools_skipped(self._next_seq(), call_ids=call_ids, reason=reason)
        return self._record(event, durable=False)

    def op_set_status(self, status: str) -> bool:
        """Change the status (durable + snapshot); False when it was already that."""
        new = SessionStatus(status)
        if new is self.state.status:
            return False
        old = self.state.status.value
        self._record(Event.status_change(self._next_seq(), old=old, new=new.value), durable=True)
        self._snapshot()
        return True

    def op_set_pending_approval(self, approval: dict[str, Any]) -> int:
        """A tool call waits for approval: record it and snapshot (survives restarts)."""
        event = Event.make(
            self._next_seq(),
            EventType.APPROVAL_REQUIRED,
            call_id=approval.get("call_id"),
            command=approval.get("command"),
        )
        seq = self._record(event, durable=True)
        self.state.pending_approval = dict(approval)
        self._snapshot()
        return seq

    def op_resolve_pending_approval(self, call_id: str, decision: str) -> int:
        """Record the decision on the pending approval and clear it (durable + snapshot)."""
        event = Event.make(
            self._next_seq(), EventType.APPROVAL_DECISION, call_id=call_id, decision=decision
        )
        seq = self._record(event, durable=True)
        self.state.pending_approval = None
        self._snapshot()
        return seq

    def op_record_error(self, code: str, message: str) -> int:
        """Durably record an error the operator should see."""
        return self._record(Event.error(self._next_seq(), code=code, message=message), durable=True)

    def op_record_delivery(self, reply_seq: int, target: str) -> int:
        """Durably record that the reply ``reply_seq`` was handed to its chat."""
        event = Event.delivery(self._next_seq(), reply_seq=reply_seq, target=target)
        return self._record(event, durable=True)

    def op_is_answered(self, user_seq: int) -> bool:
        """Whether a final reply follows the user message ``user_seq``."""
        return self.state.is_answered(user_seq)

    def op_flush(self) -> int:
        """Write everything queued (end of a turn); returns the last durable seq."""
        self._flush()
        return self.state.last_seq

    def op_snapshot(self) -> None:
        """Flush and write a snapshot now."""
        self._snapshot()

    def op_events(self, after_seq: int = 0, include_archive: bool = False) -> list[Event]:
        """Persisted events after ``after_seq`` (archive first when asked), for history reads."""
        self._flush()
        live, _ = self._log.read(after_seq)
        if not include_archive:
            return live
        archived = [e for e in self._log.read_archive() if e.seq > after_seq]
        first_live = live[0].seq if live else None
        return [e for e in archived if first_live is None or e.seq < first_live] + live

    def op_stop(self) -> None:
        """Flush, snapshot and stop; when this returns the files are final.

        The writes happen here rather than in ``on_stop`` so the caller may start a new actor
        for the same session as soon as the answer arrives, with no writer racing it.
        """
        self._final_write()
        self.stop()
