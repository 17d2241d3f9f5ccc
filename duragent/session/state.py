"""The in-memory state of one session and the rules that change it.

Pure logic, no I/O: the actor applies every new event here *and* recovery replays the log
through the same ``apply``, so a recovered session is exactly the live one.

- New messages go to ``pending``; when it reaches ``CHECKPOINT_THRESHOLD`` after a user
  message or an assistant response, it rolls into ``checkpointed`` and ``checkpoint_seq``
  advances (the snapshot stores only checkpointed messages; recovery replays the rest).
- Layer 1: at most ``message_limit`` messages are held; the oldest checkpointed ones are
  dropped (the full history stays on disk). Tool results left at the head without their call
  are dropped too.
- A tool result is placed right after the assistant message that made the call, even when it
  arrives late (a repaired, interrupted call), so the history always pairs calls and results.
- The context buffer: ``silent_message`` events (group chatter the agent only listens to)
  go to a ring of at most ``silent_cap`` entries, never to the messages. The snapshot holds
  the ring; replay skips entries it already holds (by seq), so a recovered ring is the live one.
- The pending approval: the snapshot holds it whole (tool name, arguments); an approval event
  holds only its call and command. Replay starts at the checkpoint, so approval events the
  snapshot already reflects are skipped, or an earlier approval and its decision would leave
  the partial copy.
- The summaries tier (``session.memory``): a ``summary`` event removes the oldest ``messages``
  of the window (a forced checkpoint at its seq first, so a snapshot that reflects it is
  never replayed under it) and becomes the current summary; ``pin`` / ``unpin`` change the
  pinned sections; the first user message is the session's task. Each message's origin seq
  is kept, so a summary can say which events it covers (``through_seq``).
- Deliveries: ``last_delivered_seq`` is the newest reply delivered whole (a high-water mark);
  a reply sent part by part keeps how many parts reached its chat (``delivering_seq``,
  ``delivered_parts``, in the snapshot too) until its whole delivery is recorded.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from duragent.core.events import Event
from duragent.core.messages import Message, Role, ToolCall, is_steering, steering_message
from duragent.core.payloads import (
    ApprovalDecisionData,
    ApprovalRequiredData,
    AssistantResponseData,
    DeliveryData,
    EventType,
    PinData,
    SessionStartData,
    SilentMessageData,
    StatusChangeData,
    SteeringData,
    SummaryData,
    ToolCallRecord,
    ToolResultData,
    ToolsSkippedData,
    UnpinData,
    UserMessageData,
    usage_tokens,
)
from duragent.core.snapshot import BufferedMessage, SessionSnapshot, SessionStatus
from duragent.session.memory import ContextMemory

__all__ = [
    "CHECKPOINT_THRESHOLD",
    "INTERRUPTED_RESULT",
    "RECENT_PLATFORM_IDS",
    "UNFINISHED_RESULT",
    "SessionState",
    "actor_message_limit",
]

CHECKPOINT_THRESHOLD = 50
RECENT_PLATFORM_IDS = 1000
INTERRUPTED_RESULT = "Error: tool execution interrupted by server restart"
UNFINISHED_RESULT = "Error: tool execution interrupted: its turn ended without a result"
"""Given at the start of a turn to a call an earlier turn left open (it could not record
its own result, e.g. the disk refused the write when it was cut short)."""


def actor_message_limit(max_input_tokens: int) -> int:
    """Layer 1 cap: ``clamp(max_input_tokens / 200 * 2, 100, 2000)`` messages."""
    return max(100, min(2000, (max_input_tokens // 200) * 2))


class SessionState:
    """Everything the actor knows about its session (see module docstring)."""

    def __init__(self, snapshot: SessionSnapshot) -> None:
        self.session_id = snapshot.session_id
        self.agent = snapshot.agent
        self.status = snapshot.status
        self.created_at = snapshot.created_at
        self.updated_at = snapshot.updated_at
        self.on_disconnect = snapshot.on_disconnect
        self.gateway = snapshot.gateway
        self.gateway_chat_id = snapshot.gateway_chat_id
        self.gateway_chat_type = snapshot.gateway_chat_type
        self.pending_approval: dict[str, Any] | None = snapshot.pending_approval
        self._snapshot_seq = snapshot.last_event_seq
        """Events up to here are in the snapshot (replay re-applies those after checkpoint)."""
        self.message_limit = snapshot.actor_message_limit
        self.rollover = snapshot.compaction
        self.checkpointed: list[Message] = list(snapshot.conversation)
        self.pending: list[Message] = []
        self.checkpoint_seq = snapshot.checkpoint_seq
        self.last_seq = snapshot.last_event_seq
        self.last_final_reply_seq = snapshot.last_final_reply_seq
        self.last_delivered_seq = snapshot.last_delivered_seq
        self.delivering_seq = snapshot.delivering_seq
        self.delivered_parts = snapshot.delivered_parts
        """The reply being delivered part by part, and how many of its parts reached the chat
        (``DeliveryData.parts``); 0, 0 once it is delivered whole (or none is part-way)."""
        self.last_user_seq = snapshot.last_user_seq
        self.last_settled_seq = snapshot.last_settled_seq
        self.last_answered_seq = snapshot.last_answered_seq
        self.last_decided_seq = snapshot.last_decided_seq
        self.last_failed_seq = snapshot.last_failed_seq
        seqs = snapshot.recent_platform_seqs
        if len(seqs) != len(snapshot.recent_platform_ids):
            seqs = [0] * len(snapshot.recent_platform_ids)  # older snapshot: seq unknown
        self.platform_ids: OrderedDict[str, int] = OrderedDict(
            zip(snapshot.recent_platform_ids, seqs, strict=True)
        )
        self.silent_cap = max(1, snapshot.silent_buffer_cap)
        self.silent: deque[BufferedMessage] = deque(snapshot.silent_buffer, self.silent_cap)
        self.memory = ContextMemory.from_snapshot(snapshot.summary, snapshot.pins, snapshot.task)
        self.tokens_day = snapshot.tokens_day
        self.tokens_today = snapshot.tokens_today
        """Model tokens of the session's calls on ``tokens_day`` (UTC), from their events'
        usage: kept in the snapshot, so a restart knows today's total without reading the log
        (``turns.token_quota``)."""
        self._outstanding: dict[str, None] = {}
        self._origin: dict[int, int] = {}
        """id(message) → the seq of the event it came from (checkpoint_seq for loaded ones)."""
        self._applying = snapshot.checkpoint_seq
        for m in self.checkpointed:
            self._track(m)
        if len(snapshot.conversation_seqs) == len(self.checkpointed):
            for m, seq in zip(self.checkpointed, snapshot.conversation_seqs, strict=True):
                self._origin[id(m)] = seq

    # --- queries ------------------------------------------------------------------------

    def messages(self) -> list[Message]:
        """The Layer 1 window: checkpointed then pending messages."""
        return [*self.checkpointed, *self.pending]

    def paused_turn(
        self, call_id: str, turn_seq: int | None, through_seq: int | None = None
    ) -> tuple[list[Message], list[Message], bool]:
        """(history, turn, whole) for the continuation of the turn paused on ``call_id``.

        The turn is the one that answers the person's message ``turn_seq``: from that message
        on, less the people's messages recorded after it (others wrote while it ran or
        waited: in a group they wait for the approval, ``turns.approval_wait``, and get turns
        of their own). ``whole`` is False when that message left the window (a summary
        compacted it while the turn ran): the history is then what comes before the call and
        the turn starts at the call, less the same messages; the caller shows the model the
        message again. Without ``turn_seq`` (an approval recorded before it was kept), from
        the last person's message before the call, less those after the call.
        ``through_seq``: messages up to it were handed to the turn before it asked
        (``PendingApproval.through_seq``) and are kept.
        """
        messages = self.messages()
        if turn_seq is not None:
            last = max(turn_seq, through_seq or turn_seq)

            def later(m: Message) -> bool:
                seq = self._origin.get(id(m))
                return seq is not None and seq > last and not is_steering(m)

            def kept(part: list[Message]) -> list[Message]:
                return [m for m in part if not (m.role is Role.USER and later(m))]

            own = next(
                (
                    i
                    for i, m in enumerate(messages)
                    if m.role is Role.USER and self._origin.get(id(m)) == turn_seq
                ),
                None,
            )
            if own is not None:
                return messages[: own + 1], kept(messages[own + 1 :]), True
            call = _index_of_call(messages, call_id)
            if call is not None:
                return kept(messages[:call]), kept(messages[call:]), False
        at = _index_of_call(messages, call_id)
        at = len(messages) if at is None else at
        after = {id(m) for m in messages[at + 1 :] if not is_steering(m)}
        history, turn = _split_paused(messages, at, lambda m: id(m) in after) or ([], messages)
        return history, list(turn), True

    def message_count(self) -> int:
        """How many messages the window holds."""
        return len(self.checkpointed) + len(self.pending)

    def outstanding_call_ids(self) -> list[str]:
        """Tool calls without a result, in call order (excluding a pending approval's call)."""
        waiting = (self.pending_approval or {}).get("call_id")
        return [c for c in self._outstanding if c != waiting]

    def through_seq(self, count: int) -> int:
        """The newest event the window's oldest ``count`` messages came from."""
        window = self.messages()[:count]
        return max((self._origin.get(id(m), self.checkpoint_seq) for m in window), default=0)

    def discardable_seq(self) -> int:
        """The newest seq a *discarding* rollover may delete from the log.

        Events up to ``checkpoint_seq`` are in ``state.yaml``, so recovery never needs them;
        but the history API reads the log, and the messages the model still sees and the
        current summary event (its marker) must stay readable there. A summary forces a
        checkpoint at its own seq: discarding up to it deleted the summary event and every
        message it kept (`specs/202611240835.summaries.md`, "the summary event remains").
        So only what is older than both the oldest window message and the current summary
        may go. (Archiving moves events, it loses nothing; it keeps ``checkpoint_seq``.)
        """
        bound = self.checkpoint_seq
        for message in self.messages():
            bound = min(bound, self._origin.get(id(message), self.checkpoint_seq) - 1)
        if self.memory.summary is not None:
            bound = min(bound, self.memory.summary.seq - 1)
        return max(0, bound)

    def seen_platform_id(self, platform_id: str) -> int | None:
        """The seq of the user message that carried ``platform_id``, if recorded (0 = old)."""
        return self.platform_ids.get(platform_id)

    def is_answered(self, user_seq: int) -> bool:
        """Whether the turn for the user message ``user_seq`` ended, as the chat saw it.

        A final reply was recorded after it, an approval it asked for is waiting for a
        person, or its turn failed and the chat was told (the notice was delivered). A
        redelivered copy of such a message must not run its turn again: asking again would
        cancel the approval the person is about to press, and failing again would tell the
        same failure twice (the notice says the message is saved and can be sent again; a
        recovery at start tells an unsent notice before the platform redelivers). A failure
        not yet told is not "answered": the copy retries it.
        """
        waiting = self.pending_approval is not None and self.last_settled_seq > user_seq
        told = self.last_failed_seq > user_seq and self.last_delivered_seq >= self.last_failed_seq
        return self.last_final_reply_seq > user_seq or waiting or told

    def delivery_news(self, reply_seq: int, parts: int | None) -> bool:
        """Whether a delivery of ``reply_seq`` (its first ``parts`` parts; None: all) is news.

        Not when that reply or a later one was delivered whole, nor when as many of its parts
        (or a later reply's) are recorded already: each part is recorded once.
        """
        if reply_seq <= self.last_delivered_seq:
            return False
        if parts is None:
            return True
        if reply_seq == self.delivering_seq:
            return parts > self.delivered_parts
        return reply_seq > self.delivering_seq and parts > 0

    def buffered_platform_id(self, platform_id: str) -> bool:
        """Whether the context buffer holds the message with ``platform_id`` (a redelivery)."""
        return any(m.platform_message_id == platform_id for m in self.silent)

    def recent_silent(self, max_messages: int, max_age: timedelta, now: datetime) -> list[str]:
        """The newest ≤ ``max_messages`` buffered texts at most ``max_age`` old, oldest first."""
        cutoff = now - max_age
        taken: list[str] = []
        for entry in reversed(self.silent):
            if len(taken) >= max_messages:
                break
            if _parse_time(entry.timestamp) >= cutoff:
                taken.append(entry.content)
        taken.reverse()
        return taken

    def to_snapshot(self, now: str) -> SessionSnapshot:
        """The snapshot of the current state (checkpointed messages only)."""
        return SessionSnapshot(
            session_id=self.session_id,
            agent=self.agent,
            status=self.status,
            created_at=self.created_at,
            updated_at=self.updated_at,
            snapshot_at=now,
            last_event_seq=self.last_seq,
            checkpoint_seq=self.checkpoint_seq,
            conversation=list(self.checkpointed),
            conversation_seqs=[
                self._origin.get(id(m), self.checkpoint_seq) for m in self.checkpointed
            ],
            on_disconnect=self.on_disconnect,
            gateway=self.gateway,
            gateway_chat_id=self.gateway_chat_id,
            gateway_chat_type=self.gateway_chat_type,
            pending_approval=self.pending_approval,
            actor_message_limit=self.message_limit,
            compaction=self.rollover,
            recent_platform_ids=list(self.platform_ids),
            recent_platform_seqs=list(self.platform_ids.values()),
            last_final_reply_seq=self.last_final_reply_seq,
            last_delivered_seq=self.last_delivered_seq,
            delivering_seq=self.delivering_seq,
            delivered_parts=self.delivered_parts,
            last_user_seq=self.last_user_seq,
            last_settled_seq=self.last_settled_seq,
            last_answered_seq=self.last_answered_seq,
            last_decided_seq=self.last_decided_seq,
            last_failed_seq=self.last_failed_seq,
            silent_buffer_cap=self.silent_cap,
            silent_buffer=list(self.silent),
            tokens_day=self.tokens_day,
            tokens_today=self.tokens_today,
            **self.memory.snapshot_fields(),
        )

    # --- the one way state changes --------------------------------------------------------

    def apply(self, event: Event) -> None:
        """Apply one event (live or replayed). Unknown types are ignored.

        Each type has its rule (``_RULES``: one dictionary look-up, where a chain of
        comparisons with the ``EventType`` members cost about 0.1 µs per type passed, on every
        event of a long replay); each rule reads the payload through its type's view
        (``core.payloads``), which says what a field an older record lacks reads as.
        """
        self._applying = event.seq
        rule = _RULES.get(event.type)
        if rule is not None:
            rule(self, event)
        self.last_seq = max(self.last_seq, event.seq)
        if event.timestamp:
            self.updated_at = event.timestamp

    # --- one rule per event type ------------------------------------------------------------

    def _on_user_message(self, event: Event) -> None:
        message = UserMessageData.of(event.data)
        self._append(Message.user(message.content, message.attachments))
        if self.memory.task is None:
            self.memory.task = message.content
        if message.platform_message_id:
            self._remember_platform_id(message.platform_message_id, event.seq)
        if not message.passive:  # owed an answer (a passive one is only read)
            self.last_user_seq = max(self.last_user_seq, event.seq)
        self._after_turn_message(event.seq)

    def _on_assistant(self, event: Event) -> None:
        seq = event.seq
        response = AssistantResponseData.of(event.data)
        calls = response.calls()
        content = response.content
        self._append(Message.assistant(content if (content or not calls) else None, calls))
        if not calls:
            self.last_final_reply_seq = max(self.last_final_reply_seq, seq)
            self.last_settled_seq = max(self.last_settled_seq, seq)
            answers = response.answers_seq
            through = seq if answers is None else answers
            self.last_answered_seq = max(self.last_answered_seq, through)
        self._after_turn_message(seq)
        self._count_tokens(event, response.usage)

    def _on_legacy_tool_call(self, event: Event) -> None:
        call = ToolCallRecord.of(event.data).to_call()
        target = self.pending if self.pending else self.checkpointed
        if target and target[-1].role is Role.ASSISTANT and not target[-1].tool_call_id:
            last = target[-1]
            self._origin.pop(id(last), None)
            target[-1] = Message.assistant(last.content, (*last.tool_calls, call))
            self._origin[id(target[-1])] = self._applying
        else:
            target.append(Message.assistant(None, (call,)))
            self._origin[id(target[-1])] = self._applying
        self._outstanding[call.id] = None

    def _on_tool_result(self, event: Event) -> None:
        result = ToolResultData.of(event.data)
        self._add_result(result.call_id, result.content)

    def _on_tools_skipped(self, event: Event) -> None:
        skipped = ToolsSkippedData.of(event.data)
        for call_id in skipped.call_ids:
            self._add_result(call_id, f"Skipped: {skipped.reason}")

    def _on_steering(self, event: Event) -> None:
        self._append(steering_message(SteeringData.of(event.data).content))

    def _on_status_change(self, event: Event) -> None:
        self.status = _status(StatusChangeData.of(event.data).new, self.status)

    def _on_session_end(self, event: Event) -> None:
        self.status = SessionStatus.COMPLETED

    def _on_error(self, event: Event) -> None:
        self.last_settled_seq = max(self.last_settled_seq, event.seq)  # a failed turn
        self.last_answered_seq = max(self.last_answered_seq, event.seq)
        self.last_failed_seq = max(self.last_failed_seq, event.seq)

    def _on_approval_required(self, event: Event) -> None:
        asked = ApprovalRequiredData.of(event.data)
        self.last_settled_seq = max(self.last_settled_seq, event.seq)
        through = event.seq if asked.answers_seq is None else asked.answers_seq
        self.last_answered_seq = max(self.last_answered_seq, through)  # as a final reply's
        if event.seq <= self._snapshot_seq:
            return  # the snapshot's approval is this one's outcome, tool name and all
        if self.pending_approval is None or self.pending_approval.get("call_id") != asked.call_id:
            self.pending_approval = self._approval_from(event.data, asked)

    def _on_approval_decision(self, event: Event) -> None:
        self.last_decided_seq = max(self.last_decided_seq, event.seq)
        if (
            event.seq > self._snapshot_seq
            and self.pending_approval
            and self.pending_approval.get("call_id") == ApprovalDecisionData.of(event.data).call_id
        ):
            self.pending_approval = None

    def _on_silent_message(self, event: Event) -> None:
        if self.silent and event.seq <= self.silent[-1].seq:
            return  # replayed over a snapshot that holds it already
        chatter = SilentMessageData.of(event.data)
        self.silent.append(  # the deque's maxlen drops the oldest
            BufferedMessage(
                seq=event.seq,
                timestamp=event.timestamp,
                content=chatter.content,
                platform_message_id=chatter.platform_message_id,
            )
        )

    def _on_delivery(self, event: Event) -> None:
        delivered = DeliveryData.of(event.data)
        if delivered.parts is None:  # the whole reply: what came before it is delivered too
            self.last_delivered_seq = max(self.last_delivered_seq, delivered.reply_seq)
            if self.delivering_seq <= self.last_delivered_seq:
                self.delivering_seq = self.delivered_parts = 0
        elif self.delivery_news(delivered.reply_seq, delivered.parts):  # not replayed twice
            self.delivering_seq, self.delivered_parts = delivered.reply_seq, delivered.parts

    def _on_summary(self, event: Event) -> None:
        """The oldest ``messages`` of the window leave it; the summary stands for them."""
        summary = SummaryData.of(event.data)
        self._count_tokens(event, summary.usage)
        if not self.memory.summarised(event.seq, summary):
            return  # already reflected (replayed over a snapshot that holds it)
        self.checkpointed.extend(self.pending)  # a checkpoint at the summary: see docstring
        self.pending = []
        self.checkpoint_seq = max(self.checkpoint_seq, event.seq)
        count = max(0, summary.messages)
        self._forget(self.checkpointed[:count])
        del self.checkpointed[:count]
        while self.checkpointed and self.checkpointed[0].role is Role.TOOL:
            self._forget(self.checkpointed[:1])
            del self.checkpointed[0]

    def _on_pin(self, event: Event) -> None:
        self.memory.pin(PinData.of(event.data))

    def _on_unpin(self, event: Event) -> None:
        self.memory.unpin(UnpinData.of(event.data).pin_id)

    def _on_session_start(self, event: Event) -> None:
        start = SessionStartData.of(event.data)
        self.agent = start.agent or self.agent
        self.on_disconnect = start.on_disconnect or self.on_disconnect
        if start.gateway is not None:
            self.gateway = start.gateway
        if start.gateway_chat_id is not None:
            self.gateway_chat_id = start.gateway_chat_id
        if start.gateway_chat_type is not None:
            self.gateway_chat_type = start.gateway_chat_type

    # --- helpers ----------------------------------------------------------------------------

    def _count_tokens(self, event: Event, usage: Mapping[str, Any] | None) -> None:
        """Add a model call's usage to its day's total (a new day starts from zero).

        Not for an event the snapshot already counted.
        """
        if usage is None or event.seq <= self._snapshot_seq:
            return
        tokens = usage_tokens(usage)
        day = _parse_time(event.timestamp).date().isoformat()
        if day != self.tokens_day:
            if day < self.tokens_day:
                return  # an older day's call, replayed: today's total does not hold it
            self.tokens_day, self.tokens_today = day, 0
        self.tokens_today += tokens

    def _approval_from(
        self, data: Mapping[str, Any], asked: ApprovalRequiredData
    ) -> dict[str, Any]:
        """The pending approval an ``approval_required`` event (replayed) describes.

        The event holds the whole approval; one written before it did (``call_id`` and
        ``command`` only) takes the tool's name and arguments from the call it asks about,
        which is in the history already (the assistant message that made it).
        """
        approval = {k: v for k, v in data.items() if v is not None}  # unknown fields too
        if asked.tool_name is None:
            call = self._call_in_history(asked.call_id)
            if call is not None:
                approval["tool_name"] = call.name
                # unparsable arguments stay out: running the call reports them, as before
                with contextlib.suppress(ValueError):
                    approval.setdefault("arguments", call.parsed_arguments())
        return approval

    def _call_in_history(self, call_id: str) -> ToolCall | None:
        for message in reversed([*self.checkpointed, *self.pending]):
            for call in message.tool_calls:
                if call.id == call_id:
                    return call
        return None

    def _forget(self, messages: list[Message]) -> None:
        for message in messages:
            self._origin.pop(id(message), None)
            for call in message.tool_calls:
                self._outstanding.pop(call.id, None)

    def _track(self, message: Message) -> None:
        self._origin[id(message)] = self._applying
        for call in message.tool_calls:
            self._outstanding[call.id] = None
        if message.role is Role.TOOL and message.tool_call_id:
            self._outstanding.pop(message.tool_call_id, None)

    def _append(self, message: Message) -> None:
        self.pending.append(message)
        self._track(message)

    def _add_result(self, call_id: str, content: str) -> None:
        """Place a result right after the newest call with its id, unless it is there already.

        "Already there" is judged at that call, not by the id ever having had a result: a
        replay over a snapshot that holds a late result adds nothing, while a model that
        reuses call ids (``call_0`` in every turn) still gets each result, live and replayed.
        """
        message = Message.tool(call_id, content)
        for messages in (self.pending, self.checkpointed):
            index = _index_of_call(messages, call_id)
            if index is not None:
                end = index + 1
                while end < len(messages) and messages[end].role is Role.TOOL:
                    if messages[end].tool_call_id == call_id:
                        return  # already present (replay over a snapshot that holds it)
                    end += 1
                messages.insert(end, message)
                self._track(message)
                return
        if any(m.role is Role.TOOL and m.tool_call_id == call_id for m in self.messages()):
            return  # its call left the window; the result is there already
        self._append(message)

    def _remember_platform_id(self, platform_id: str, seq: int) -> None:
        self.platform_ids[platform_id] = seq
        self.platform_ids.move_to_end(platform_id)
        while len(self.platform_ids) > RECENT_PLATFORM_IDS:
            self.platform_ids.popitem(last=False)

    def _after_turn_message(self, seq: int) -> None:
        if len(self.pending) >= CHECKPOINT_THRESHOLD:
            self.checkpointed.extend(self.pending)
            self.pending = []
            self.checkpoint_seq = seq
        excess = self.message_count() - self.message_limit
        if excess > 0 and self.checkpointed:
            cut = min(excess, len(self.checkpointed))
            self._forget_origin(self.checkpointed[:cut])
            del self.checkpointed[:cut]
            while self.checkpointed and self.checkpointed[0].role is Role.TOOL:
                self._forget_origin(self.checkpointed[:1])
                del self.checkpointed[0]

    def _forget_origin(self, messages: list[Message]) -> None:
        for message in messages:
            self._origin.pop(id(message), None)


_RULES: dict[str, Callable[[SessionState, Event], None]] = {
    EventType.USER_MESSAGE.value: SessionState._on_user_message,
    EventType.ASSISTANT_RESPONSE.value: SessionState._on_assistant,
    EventType.ASSISTANT_MESSAGE.value: SessionState._on_assistant,
    EventType.TOOL_CALL.value: SessionState._on_legacy_tool_call,
    EventType.TOOL_RESULT.value: SessionState._on_tool_result,
    EventType.TOOLS_SKIPPED.value: SessionState._on_tools_skipped,
    EventType.STEERING.value: SessionState._on_steering,
    EventType.STATUS_CHANGE.value: SessionState._on_status_change,
    EventType.SESSION_END.value: SessionState._on_session_end,
    EventType.ERROR.value: SessionState._on_error,
    EventType.APPROVAL_REQUIRED.value: SessionState._on_approval_required,
    EventType.APPROVAL_DECISION.value: SessionState._on_approval_decision,
    EventType.SILENT_MESSAGE.value: SessionState._on_silent_message,
    EventType.DELIVERY.value: SessionState._on_delivery,
    EventType.SUMMARY.value: SessionState._on_summary,
    EventType.PIN.value: SessionState._on_pin,
    EventType.UNPIN.value: SessionState._on_unpin,
    EventType.SESSION_START.value: SessionState._on_session_start,
}
"""Each event type's rule, keyed by the plain string an event read from the log carries."""


def _split_paused(
    messages: list[Message], at: int, later: Callable[[Message], bool]
) -> tuple[list[Message], list[Message]] | None:
    """``messages`` split for a paused turn's continuation (None: no place to split).

    At the last person's message before index ``at`` that ``later`` does not put after the
    turn's own; the turn leaves out those ``later`` does.
    """
    for i in range(min(at, len(messages)) - 1, -1, -1):
        m = messages[i]
        if m.role is Role.USER and not is_steering(m) and not later(m):
            turn = [n for n in messages[i + 1 :] if not (n.role is Role.USER and later(n))]
            return messages[: i + 1], turn
    return None


def _index_of_call(messages: list[Message], call_id: str) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.role is Role.ASSISTANT and any(c.id == call_id for c in m.tool_calls):
            return i
    return None


def _parse_time(stamp: str) -> datetime:
    """An event's RFC 3339 time; an unreadable one counts as very old (never injected)."""
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)


def _status(value: object, default: SessionStatus) -> SessionStatus:
    try:
        return SessionStatus(str(value))
    except ValueError:
        return default
