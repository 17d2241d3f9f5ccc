"""Keeping this node's session leases alive, and letting go of the ones it lost.

With a shared store (``store.SharedStorage``, PostgreSQL) an actor's session is leased to
this node: every write renews the lease, but an idle actor writes nothing, and a lease that
runs out lets another node take the session while the actor still holds it in memory. So
while actors live the ``LeaseKeeper`` renews *every* lease this node holds in one round trip
(one batched ``UPDATE``, not one per session) every ``lease_seconds / 3``: two renewals may
fail (a slow database, a long pause) before the lease is at risk.

A lease the renewal finds lost (another node claimed the session after this node paused
past it, or the session was quarantined elsewhere) stops its actor at once (``on_lost``);
its writes were already refused by the epoch fence, so nothing stale reached the store. An
actor that stops gives its lease up (``SessionLog.close``), so stopped sessions are not
renewed. A renewal that fails (the database away) is logged and tried again next period:
the leases expire by themselves if it stays away, and the fence keeps any later write out.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from duragent.errors import StorageError
from duragent.observability.metrics import Metrics
from duragent.store import SharedStorage

__all__ = ["LeaseKeeper"]

log = logging.getLogger(__name__)


class LeaseKeeper:
    """Renews ``store``'s leases every ``lease_seconds / 3``; reports the lost ones."""

    def __init__(self, store: SharedStorage, on_lost: Callable[[str], Awaitable[None]]) -> None:
        self._store = store
        self._on_lost = on_lost
        self.interval = store.lease_seconds / 3
        self.renewals = 0
        """Round trips made (one per period, however many sessions are held)."""
        self.lost = 0
        """Sessions whose lease was found lost (their actors were stopped)."""

    def instrument(self, metrics: Metrics) -> None:
        """Export the counters at scrape time (``duragent_session_lease_events``)."""
        metrics.sample(
            "duragent_session_lease_events",
            "Since start: lease renewal round trips, leases found lost, writes refused by the "
            "lease fence (a shared store only).",
            lambda: [
                (("renewal",), float(self.renewals)),
                (("lost",), float(self.lost)),
                (("fenced_write",), float(self._store.fenced_writes)),
            ],
            labels=("event",),
        )

    async def renew_once(self) -> list[str]:
        """One renewal round trip (in a thread); stops the actors of the sessions lost."""
        lost = await asyncio.to_thread(self._store.renew_leases)
        self.renewals += 1
        for session_id in lost:
            self.lost += 1
            log.warning(
                "session %s: this node's lease was lost (another node owns it now); "
                "its actor stops without writing",
                session_id,
            )
            await self._on_lost(session_id)
        return lost

    async def run_forever(self) -> None:
        """Renew every period until cancelled (at close)."""
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.renew_once()
            except StorageError as exc:  # the database away: the leases expire meanwhile
                log.warning(
                    "renewing session leases failed (again in %.1f s): %s", self.interval, exc
                )
            except Exception:  # never let the keeper die: every lease would expire
                log.exception("renewing session leases failed (again in %.1f s)", self.interval)
