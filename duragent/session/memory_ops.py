"""The actor's operations for the summaries tier: record a summary, pin, unpin, read memory.

A mixin of ``SessionOps`` (same rules: these run on the actor's thread only). Every write
here is durable before it changes the state — a ``summary`` event is fsync'd, applied (the
window loses the summarised messages) and then a snapshot is written so ``state.yaml``
carries the summary; a crash before the fsync leaves the old state, after it the new one.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from duragent.core.events import Event
from duragent.core.messages import Message, Role, Usage
from duragent.session.journal import Journal
from duragent.session.memory import Pin, SummaryRecord
from duragent.session.ops import op

__all__ = ["MemoryOps", "MemoryView", "SummaryRecorded"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryView:
    """What a turn reads to render the reference block."""

    summary: SummaryRecord | None
    pins: tuple[Pin, ...]
    task: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryRecorded:
    """A summary written: its seq, round and how many window messages it replaced."""

    seq: int
    round: int
    messages: int
    through_seq: int


class MemoryOps:
    """The ops ``record_summary``, ``pin``, ``unpin`` and ``memory`` (see module docstring)."""

    _journal: Journal

    @op(retry_safe=False, read_only=True)
    def memory(self) -> MemoryView:
        """The current summary, pins and task."""
        memory = self._journal.state.memory
        return MemoryView(
            summary=memory.summary, pins=tuple(memory.pins.values()), task=memory.task
        )

    @op(retry_safe=False)  # an event, then a snapshot: a retry could repeat the event
    def record_summary(
        self,
        summary: str,
        last: Message,
        tokens_before: int,
        tokens_after: int,
        model: str,
        usage: Usage | None = None,
        extractive: bool = False,
    ) -> SummaryRecorded | None:
        """Durably replace the window's messages up to ``last`` (inclusive) with ``summary``.

        ``last`` is found by identity in the current window (messages may have left it or
        arrived meanwhile); None when it is no longer there — then the window moved on
        without it and the summary is not recorded (the caller's view was stale). A prefix
        holding a call still waiting for its result or an approval, or ending inside a call's
        results, is refused (None) too.
        """
        state = self._journal.state
        window = state.messages()
        count = next((i + 1 for i, m in enumerate(window) if m is last), 0)
        if count == 0:
            return None
        waiting = set(state.outstanding_call_ids())
        approval = (state.pending_approval or {}).get("call_id")
        if approval:
            waiting.add(str(approval))
        if any(c.id in waiting for m in window[:count] for c in m.tool_calls):
            return None
        if count < len(window) and window[count].role is Role.TOOL:
            return None  # inside a call's results: a call never leaves without them
        round_ = (state.memory.summary.round if state.memory.summary else 0) + 1
        through = state.through_seq(count)
        event = Event.summary(
            self._journal.next_seq(),
            round=round_,
            summary=summary,
            through_seq=through,
            messages=count,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            model=model,
            usage=usage,
            extractive=extractive,
        )
        seq = self._journal.record(event, durable=True)
        self._journal.snapshot()
        return SummaryRecorded(seq=seq, round=round_, messages=count, through_seq=through)

    @op(retry_safe=False)
    def pin(self, text: str, kind: str, source: str, pin_id: str | None = None) -> str:
        """Durably pin ``text``; its id (a new one unless ``pin_id`` replaces a pin)."""
        pin_id = pin_id or f"pin_{uuid.uuid4().hex[:12]}"
        event = Event.pin(
            self._journal.next_seq(), pin_id=pin_id, kind=kind, text=text, source=source
        )
        self._journal.record(event, durable=True)
        return pin_id

    @op(retry_safe=False)
    def unpin(self, pin_id: str) -> bool:
        """Durably remove a pin; False when there was none with that id."""
        if pin_id not in self._journal.state.memory.pins:
            return False
        self._journal.record(Event.unpin(self._journal.next_seq(), pin_id=pin_id), durable=True)
        return True
