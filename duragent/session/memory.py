"""What a session remembers beyond its window: the current summary, the pins, the task.

The summaries tier (``specs/202611240835.summaries.md``) replaces the oldest messages of the
Layer 1 window with an LLM-written summary and keeps a few sections out of its reach: the
session's original task (its first user message) and sections pinned by the user, an
operator or the agent (decisions). All of it is derived from events (``summary``, ``pin``,
``unpin``, the first ``user_message``) by ``SessionState.apply``, carried by ``state.yaml``,
and read by a turn to render the reference block after the system prompt.

Applying is idempotent by order: a pin is keyed by its id, an unpin removes it, and replaying
events over a snapshot that already reflects some of them ends in the same place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from duragent.core.payloads import PinData, SummaryData

__all__ = ["ContextMemory", "Pin", "SummaryRecord"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryRecord:
    """The current summary: what replaced the window's oldest messages, as of round N."""

    round: int
    text: str
    through_seq: int
    seq: int
    """The ``summary`` event's own seq."""

    def to_dict(self) -> dict[str, Any]:
        """The mapping ``state.yaml`` holds."""
        return {
            "round": self.round,
            "summary": self.text,
            "through_seq": self.through_seq,
            "seq": self.seq,
        }

    @classmethod
    def from_dict(cls, snapshot: Mapping[str, Any]) -> SummaryRecord:
        """Inverse of ``to_dict``: the ``summary`` event's fields, and the event's ``seq``."""
        return cls.of_event(int(snapshot.get("seq") or 0), SummaryData.of(snapshot))

    @classmethod
    def of_event(cls, seq: int, summary: SummaryData) -> SummaryRecord:
        """The record of the ``summary`` event ``seq``."""
        return cls(
            round=summary.round, text=summary.summary, through_seq=summary.through_seq, seq=seq
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Pin:
    """A section sent with every request and never summarised."""

    pin_id: str
    kind: str
    """``task`` (the original task, restated), ``decision`` (the agent's) or ``note``."""
    text: str
    source: str
    """Who pinned it: ``user``, ``operator`` or ``agent``."""

    def to_dict(self) -> dict[str, Any]:
        """The mapping ``state.yaml`` holds (the ``pin`` event's payload too)."""
        return {"pin_id": self.pin_id, "kind": self.kind, "text": self.text, "source": self.source}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Pin:
        """Inverse of ``to_dict`` (the ``pin`` event's payload: the same mapping)."""
        return cls.of_event(PinData.of(data))

    @classmethod
    def of_event(cls, pin: PinData) -> Pin:
        """The pin a ``pin`` event adds."""
        return cls(pin_id=pin.pin_id, kind=pin.kind, text=pin.text, source=pin.source)


@dataclass(slots=True)
class ContextMemory:
    """The summary, pins and task of one session (see module docstring)."""

    summary: SummaryRecord | None = None
    pins: dict[str, Pin] = field(default_factory=dict)
    task: str | None = None

    @classmethod
    def from_snapshot(
        cls, summary: Mapping[str, Any] | None, pins: list[dict[str, Any]], task: str | None
    ) -> ContextMemory:
        """The memory a snapshot holds."""
        loaded = [Pin.from_dict(p) for p in pins]
        return cls(
            summary=SummaryRecord.from_dict(summary) if summary else None,
            pins={p.pin_id: p for p in loaded},
            task=task,
        )

    def pin(self, event: PinData) -> None:
        """Apply a ``pin`` event (a pin with the same id is replaced)."""
        pin = Pin.of_event(event)
        if pin.pin_id:
            self.pins.pop(pin.pin_id, None)
            self.pins[pin.pin_id] = pin

    def unpin(self, pin_id: str) -> None:
        """Apply an ``unpin`` event (unknown ids are ignored)."""
        self.pins.pop(pin_id, None)

    def summarised(self, seq: int, summary: SummaryData) -> bool:
        """Apply the ``summary`` event ``seq``; False when the memory already holds it."""
        if self.summary is not None and self.summary.seq >= seq:
            return False
        self.summary = SummaryRecord.of_event(seq, summary)
        return True

    def snapshot_fields(self) -> dict[str, Any]:
        """The snapshot's ``summary``, ``pins`` and ``task``."""
        return {
            "summary": self.summary.to_dict() if self.summary else None,
            "pins": [p.to_dict() for p in self.pins.values()],
            "task": self.task,
        }
