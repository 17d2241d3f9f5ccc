"""The schedules the loop tracks, and those removed while a run of theirs goes on.

A schedule removed during a run (a declared one no longer declared, after a reload) is no
longer listed nor started, but its run is let finish: the slot is kept aside (``retire``)
until the run ends, so stopping the server still cancels it and records it interrupted, and
the same schedule declared again meanwhile takes that slot back (``take_back``) rather than
read its run log, which would show the unfinished run as interrupted and start it again.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime

from duragent.scheduler.model import Schedule
from duragent.scheduler.runs import Dangling, RunState

__all__ = ["Slot", "Slots"]


@dataclass(slots=True)
class Slot:
    """One schedule as the loop tracks it."""

    schedule: Schedule
    state: RunState
    next: datetime | None = None
    task: asyncio.Task[None] | None = None
    resume: Dangling | None = None  # an interrupted run to attempt again
    seen: set[int] = field(default_factory=set)  # due times started in this process (ms)
    fault: str | None = None  # why its due times could not be computed (it is set aside)


class Slots(dict[str, Slot]):
    """The tracked schedules by id, and the removed ones whose run goes on (module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._retiring: dict[str, Slot] = {}

    def retire(self, schedule_id: str) -> Slot | None:
        """Stop tracking the schedule; its slot is kept aside while its run goes on."""
        slot = self.pop(schedule_id, None)
        if slot is not None and slot.task is not None:
            self._retiring[schedule_id] = slot
        return slot

    def take_back(self, schedule_id: str) -> Slot | None:
        """The slot of a schedule removed while its run goes on (None: there is none)."""
        return self._retiring.pop(schedule_id, None)

    def ended(self, slot: Slot) -> None:
        """``slot``'s run ended: a removed schedule's slot is let go."""
        if self._retiring.get(slot.schedule.id) is slot:
            del self._retiring[slot.schedule.id]

    def running(self) -> list[asyncio.Task[None]]:
        """Every run in progress, those of schedules removed meanwhile too."""
        slots = [*self.values(), *self._retiring.values()]
        return [s.task for s in slots if s.task is not None]
