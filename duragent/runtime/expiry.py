"""The TTL sweep: sessions idle past their agent's ``ttl_hours`` are completed.

Hourly on the runtime's clock, the first hour skipped (as the reference), and never closer
than ``FLOOR_SECONDS`` of real time: a sweep lists every session, and a simulated clock
(``bench/year``) may pass an hour in a few milliseconds. "Idle" compares a session's
``updated_at`` with the process's calendar (``duragent.core.clock``), the same time its events
were stamped with.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import timedelta

from duragent.scheduler import Clock
from duragent.session import SessionRegistry

__all__ = ["FLOOR_SECONDS", "SWEEP_SECONDS", "sweep_forever"]

log = logging.getLogger(__name__)

SWEEP_SECONDS = 3600.0
FLOOR_SECONDS = 1.0


async def sweep_forever(
    registry: SessionRegistry,
    ttl_hours_for: Callable[[str], float | None],
    clock: Clock,
    tidy: Callable[[], object],
    *,
    floor_seconds: float = FLOOR_SECONDS,
) -> None:
    """Expire idle sessions, then ``tidy`` (runs in a thread: scratch directories), forever.

    A failed sweep is logged and the next one comes an hour later: nothing is lost by waiting.
    """
    never = asyncio.Event()
    while True:
        await asyncio.sleep(floor_seconds)
        await clock.wait_until(clock.now() + timedelta(seconds=SWEEP_SECONDS), never)
        try:
            await registry.expire(ttl_hours_for)
            await asyncio.to_thread(tidy)
        except Exception:
            log.exception("TTL sweep failed")
