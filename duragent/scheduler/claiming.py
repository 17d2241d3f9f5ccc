"""A due time claimed in the shared database before it starts, through an outage.

With several nodes (PostgreSQL) each due time is claimed before its first attempt — (schedule
id, due time) is a primary key — so it starts once cluster-wide (``service``). The claim is a
database write: it is made from a thread (the event loop serves every session of the node)
and, while the database cannot be reached, tried again with a growing pause until the due
time's grace has passed — by the scheduler's clock, or as long in real time, whichever comes
first. Then it is given up with an error in the log; the next leader finds that due time in
no run log and records it missed, as for any due time no node was up to start.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime

from duragent.scheduler.clock import Clock
from duragent.scheduler.runs import to_ms
from duragent.store.protocols import RunClaims

__all__ = ["claim_in_grace"]

log = logging.getLogger(__name__)

FIRST_PAUSE_SECONDS = 0.25
LONGEST_PAUSE_SECONDS = 5.0


async def claim_in_grace(
    claims: RunClaims, schedule_id: str, due: datetime, clock: Clock, grace: float
) -> bool:
    """Whether this node may start ``due`` (False: another node did, or the claim gave up)."""
    loop = asyncio.get_running_loop()
    give_up_at, pause = loop.time() + grace, FIRST_PAUSE_SECONDS
    while True:
        try:
            if await asyncio.to_thread(claims.claim, schedule_id, to_ms(due)):
                return True
            log.info("schedule %s: due time %s was started by another node", schedule_id, due)
            return False
        except OSError as exc:  # StorageError: the database is away
            late = (clock.now() - due).total_seconds()
            if late > grace or loop.time() > give_up_at:
                log.error(
                    "schedule %s: due time %s not run: it could not be claimed within its "
                    "grace of %.0f s (%s)", schedule_id, due, grace, exc,
                )  # fmt: skip
                return False
            log.warning("schedule %s: due time %s not claimed yet (%s); trying again in "
                        "%.2f s", schedule_id, due, exc, pause)  # fmt: skip
            await asyncio.sleep(pause)
            pause = min(pause * 2, LONGEST_PAUSE_SECONDS)
