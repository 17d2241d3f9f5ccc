"""The scheduler on several nodes: the loop runs on the leader only, every node keeps up.

With ``store.backend: postgres`` every node shares the schedules and their run logs. The loop
(``service.Scheduler``) runs on the holder of the ``scheduler`` leader lease
(``cluster.run_as_leader``); when a node becomes leader it reads every run log afresh (the
last leader's runs, and one it left unfinished, are then in its cursors), and when it loses
the lead its runs are interrupted and it goes passive. Every node, leader or not, re-reads
the shared schedules every ``REFRESH_SECONDS`` (``take_changes``), so listings and the
``schedule`` tool see what another node created or cancelled; a reload of the agents re-reads
them at once (``refresh``), with the schedules this node's agent files declare now. Kept
apart from ``front`` (the operations) because this is only how the loop is placed, never
what a caller may do. ``take_declared`` is a reload's re-read on one node.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from duragent.cluster.leaders import run_as_leader
from duragent.scheduler.declared import comparable
from duragent.scheduler.model import Schedule
from duragent.scheduler.runs import RunState
from duragent.scheduler.service import Scheduler
from duragent.store.cluster import Cluster

__all__ = ["REFRESH_SECONDS", "SchedulerLeadership", "take_changes", "take_declared"]

log = logging.getLogger(__name__)

REFRESH_SECONDS = 2.0
"""With several nodes: how often each re-reads the shared schedules (a schedule created on
another node is run by the leader at most this late, well within any grace)."""


def take_changes(
    scheduler: Scheduler,
    loaded: list[Schedule],
    states: dict[str, RunState] | None = None,
    *,
    before: dict[str, object] | None = None,
) -> None:
    """Hand ``scheduler`` the schedules created, changed or removed elsewhere.

    Elsewhere: on other nodes, or in the agent files (declared ones, after a reload:
    ``declared``). ``loaded``: every schedule as read just now; ``states``: the run states of
    the new ones among them (read from the run logs when not given). ``before``: what the
    scheduler held when the read began (``held``): a schedule this node created, changed or
    cancelled since is newer than the read, and is left as it is (the next read has it).
    """
    current = {s.id: s for s in loaded}

    def changed_here(schedule_id: str) -> bool:
        return before is not None and held(scheduler, schedule_id) != before.get(schedule_id)

    for schedule in current.values():
        known = scheduler.get(schedule.id)
        if changed_here(schedule.id):
            continue
        if known is None or comparable(known) != comparable(schedule):
            scheduler.put(schedule, (states or {}).get(schedule.id))
    for schedule in scheduler.schedules():
        if schedule.id not in current and not changed_here(schedule.id):
            scheduler.remove(schedule.id)


def held(scheduler: Scheduler, schedule_id: str) -> object:
    """What ``scheduler`` holds of a schedule now, to compare (None: nothing)."""
    known = scheduler.get(schedule_id)
    return None if known is None else comparable(known)


async def take_declared(scheduler: Scheduler, declared: list[Schedule]) -> None:
    """One node: hand ``scheduler`` the schedules the agents declare now (after a reload).

    The stored ones are the loop's already (this process alone writes them). The run logs of
    the new ones are read in a thread; when that fails, the rest is taken all the same (no
    removed one runs again) and the error raised: the new ones wait for the next reload.
    """
    unknown = [s for s in declared if scheduler.get(s.id) is None]
    failed: OSError | None = None
    try:
        states = await asyncio.to_thread(scheduler.read_states, unknown)
    except OSError as exc:
        states, failed = {}, exc
        declared = [s for s in declared if s not in unknown]
    stored = [s for s in scheduler.schedules() if s.declared_in is None]
    take_changes(scheduler, stored + declared, states)
    if failed is not None:
        raise failed


class SchedulerLeadership:
    """The loop placed on the leader, the schedules kept fresh everywhere (module docstring)."""

    def __init__(
        self,
        scheduler: Scheduler,
        cluster: Cluster,
        load: Callable[[], list[Schedule]],
        described: str,
    ) -> None:
        """``load``: every usable schedule (blocking); ``described``: where they are, for logs."""
        self.scheduler = scheduler
        self._cluster = cluster
        self._load = load
        self._described = described
        self._reading = asyncio.Lock()
        """One read-and-take at a time: a read begun before a reload is never taken after
        the reload's own (it would bring back what the reload removed)."""

    async def start(self) -> list[asyncio.Task[None]]:
        """Take the schedules passively, then campaign for the lead and refresh: the tasks."""
        self.scheduler.passive = True
        self.scheduler.reset(*await self._read_off_loop())
        leading = run_as_leader(
            self._cluster.leaders, "scheduler", self._lead, on_lost=self._follow
        )
        return [
            asyncio.create_task(leading, name="scheduler-leader"),
            asyncio.create_task(self._refresh_forever(), name="scheduler-refresh"),
        ]

    async def _lead(self) -> None:
        """This node leads: read every run log afresh (the last leader's runs) and loop."""
        async with self._reading:
            self.scheduler.passive = False
            self.scheduler.reset(*await self._read_off_loop())
        await self.scheduler.run_forever()

    async def refresh(self) -> None:
        """Take the schedules as stored and declared now (a reload of the agents calls it).

        Raises ``OSError`` (``StorageError``) when the database cannot be read: the next
        periodic refresh takes them then.
        """
        async with self._reading:
            before = {s.id: held(self.scheduler, s.id) for s in self.scheduler.schedules()}
            loaded, states = await self._read_off_loop(only_new=True)
            take_changes(self.scheduler, loaded, states, before=before)

    async def _read_off_loop(
        self, only_new: bool = False
    ) -> tuple[list[Schedule], dict[str, RunState]]:
        """The schedules and their run states, read in a thread (the database may be slow).

        ``only_new``: the run states of the schedules the loop does not know yet only.
        """

        def read() -> tuple[list[Schedule], dict[str, RunState]]:
            loaded = self._load()
            unread = [s for s in loaded if not only_new or self.scheduler.get(s.id) is None]
            return loaded, self.scheduler.read_states(unread)

        return await asyncio.to_thread(read)

    async def _follow(self) -> None:
        """This node lost the lead: its runs are interrupted; it only keeps the schedules."""
        await self.scheduler.stop()
        self.scheduler.passive = True

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(REFRESH_SECONDS)
            try:
                await self.refresh()
            except OSError as exc:  # StorageError: the database is away; try again later
                log.warning("schedules could not be re-read from %s: %s", self._described, exc)
