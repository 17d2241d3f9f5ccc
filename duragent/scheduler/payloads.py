"""What the scheduler's loop asks of the rest: a payload runner, its report, the settings.

Kept apart from the loop (``service``) so the loop module is the loop; ``service`` still
exports these names, which is where the server and the tests import them from.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from duragent.scheduler.model import Schedule

__all__ = ["PayloadRunner", "Record", "RunReport", "SchedulerSettings", "backoff_seconds"]

Record = Callable[[str, int], Awaitable[None]]
"""``record(session_id, seq)``: the run wrote ``seq`` into the session (durably logged)."""


@dataclass(frozen=True, slots=True)
class RunReport:
    """How one attempt went: ``error`` is None on success."""

    error: str | None = None
    session_id: str | None = None


class PayloadRunner(Protocol):
    """Runs a schedule's payload for one due time (``chat.ChatPayloads`` in the server)."""

    async def run(
        self, schedule: Schedule, due: datetime, record: Record, attempt: int = 1
    ) -> RunReport:
        """Deliver the message or run the task; expected failures are a report, not raised.

        ``attempt`` > 1: an earlier attempt for ``due`` may have written into the session
        (then failed, or was killed before its ``recorded`` line): it must not write again.
        """
        ...


@dataclass(frozen=True, slots=True)
class SchedulerSettings:
    """``duragent.yaml`` ``scheduler:`` (see config)."""

    max_concurrent_runs: int = 5
    one_shot_grace_seconds: float = 86400.0
    recurring_grace_seconds: float = 60.0


def backoff_seconds(attempt: int, initial_ms: int, max_ms: int, rng: random.Random) -> float:
    """Delay before retry ``attempt`` (1 = first retry): doubling, capped, ±20 % jitter."""
    delay: float = min(initial_ms * 2 ** min(attempt - 1, 10), max_ms)
    return delay * rng.uniform(0.8, 1.2) / 1000
