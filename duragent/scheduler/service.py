"""The scheduler: one durable loop that starts each due time of each schedule at most once.

The loop keeps, per schedule, its *cursor* (the newest due time already handled, from the
run log) and the next due time after it (``timing.next_due``). It sleeps until the earliest
one (``Clock.wait_until``; woken early when schedules change or a run ends), then for each
schedule that is due:

- **catches up** (``catch_up``): of the due times that passed, only the newest may run, and
  only within its grace; the others are recorded as one ``missed`` line;
- **starts** it: the cursor moves in memory at once, and the run's ``running`` line is on
  disk (fsync'd) before the payload does anything, so after a crash that due time is never
  started again. With several nodes (``claims``), the due time is first claimed in the
  database — (schedule id, due time) is a primary key — so it starts once cluster-wide even
  when two nodes believe they lead the scheduler for a moment (one paused past its lease).
  The claim and every run-log line then go through a thread (``run_writes``): the database
  being slow or away stalls a run, never the event loop, and never ends the loop (a claim
  that cannot be written is tried again until the due time's grace has passed).
  At most ``max_concurrent_runs`` run at once (the rest wait their turn).

A run ends in exactly one outcome line (``runs``), after its attempts (``attempts``: retries
with backoff as its ``retry`` block allows); a recurring schedule keeps its next due time
whatever the outcome. At start, a run the log shows as started and not ended was
interrupted: it is recorded so and, unless it is known to have written, run again for the
same due time, which finds in the session what it may have written (``catch_up.interrupted``).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial

from duragent.errors import ConfigError
from duragent.observability.metrics import Metrics
from duragent.scheduler.attempts import outcome, run_attempts
from duragent.scheduler.catch_up import grace_seconds, interrupted, passed
from duragent.scheduler.claiming import claim_in_grace
from duragent.scheduler.clock import Clock
from duragent.scheduler.declared import registration, removal
from duragent.scheduler.model import At, Schedule
from duragent.scheduler.payloads import (
    PayloadRunner,
    Record,
    RunReport,
    SchedulerSettings,
    backoff_seconds,
)
from duragent.scheduler.run_writes import RunLogWriter
from duragent.scheduler.runs import Dangling, RunState, count_line, to_ms
from duragent.scheduler.slots import Slot, Slots
from duragent.scheduler.timing import next_due
from duragent.store.protocols import RunClaims, RunLogStorage

__all__ = [  # the payload contract lives in ``payloads``; named here as it always was
    "PayloadRunner",
    "Record",
    "RunReport",
    "Scheduler",
    "SchedulerSettings",
    "backoff_seconds",
]

log = logging.getLogger(__name__)

STOP_FLUSH_SECONDS = 5.0
"""How long stopping waits for run-log lines still on their way to the database."""


class Scheduler:
    """The loop and the operations on schedules (see module docstring)."""

    def __init__(
        self,
        runs: RunLogStorage,
        payloads: PayloadRunner,
        clock: Clock,
        settings: SchedulerSettings | None = None,
        *,
        rng: random.Random | None = None,
        claims: RunClaims | None = None,
    ) -> None:
        """The loop over ``runs``, running payloads with ``payloads``.

        ``claims``: where each due time is claimed before its first attempt, when several
        nodes share the schedules (None: this process alone decides, by its run log).
        """
        self._runs = runs
        self._claims = claims
        self._writes = RunLogWriter(runs, off_loop=claims is not None)
        self.passive = False
        """A node that does not lead the scheduler: it keeps the schedules (listings) and
        leaves run logs alone (an unfinished run there is the leader's, not interrupted)."""
        self._payloads = payloads
        self._clock = clock
        self.settings = settings = settings or SchedulerSettings()
        self._rng = rng or random.Random()
        self._slots = Slots()
        self._limit = asyncio.Semaphore(settings.max_concurrent_runs)
        self._changed = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self.on_status: Callable[[Schedule], None] = lambda schedule: None
        """Called when the scheduler itself changes a status (a one-shot completed)."""
        self.metrics: Metrics | None = None
        """Where runs are counted by status, and how late each started (the metrics)."""

    @property
    def loop(self) -> asyncio.Task[None] | None:
        """The loop's task once ``start`` made it (None before, and after ``stop``)."""
        return self._loop

    # --- schedules ----------------------------------------------------------------------------

    def schedules(self) -> list[Schedule]:
        """Every schedule known, by id."""
        return [self._slots[k].schedule for k in sorted(self._slots)]

    def get(self, schedule_id: str) -> Schedule | None:
        """The schedule, or None."""
        slot = self._slots.get(schedule_id)
        return slot.schedule if slot else None

    def state(self, schedule_id: str) -> RunState:
        """The schedule's durable run state (``next_run_at`` as the loop sees it now)."""
        slot = self._slots[schedule_id]
        slot.state.next_run_at = slot.next if slot.schedule.status == "active" else None
        return slot.state

    def history(self, schedule_id: str, limit: int = 50) -> list[dict[str, object]]:
        """The last ``limit`` run-log lines, oldest first."""
        return list(self._runs.recent(schedule_id, limit))

    def read_states(self, schedules: Sequence[Schedule]) -> dict[str, RunState]:
        """Each schedule's run state, from its run log (blocking: call it from a thread)."""
        return {s.id: RunState.fold(self._runs.recent(s.id, 1_000_000)) for s in schedules}

    def put(self, schedule: Schedule, state: RunState | None = None) -> None:
        """Add or replace a schedule; a new one's ``state`` is read from its run log if None.

        A declared schedule first seen, declared again or given another timing is registered
        from now (``declared.registration``); one removed while its run went on takes that
        run's slot back, so the run is neither started again nor taken for interrupted.
        """
        slot = self._slots.get(schedule.id)
        before = slot.schedule if slot is not None else None
        if slot is None:
            slot = self._slots.take_back(schedule.id) or self._fresh(schedule, state)
            self._slots[schedule.id] = slot
        reason = None if self.passive else registration(before, schedule, slot.state)
        if reason is not None:
            line = {"status": "registered", "cursor": to_ms(self._clock.now()), "reason": reason}
            self._append(slot, line)
        slot.schedule = schedule
        slot.fault = None
        after = slot.state.cursor or schedule.created_at  # never ran: due times after creation
        try:
            active = schedule.status == "active"
            slot.next = next_due(schedule.timing, after, schedule.created_at) if active else None
        except Exception as exc:  # one schedule's bad timing never stops the others
            self._set_aside(slot, exc)
        self._changed.set()

    def _fresh(self, schedule: Schedule, state: RunState | None) -> Slot:
        """A slot for a schedule not known yet, its run left interrupted taken care of."""
        if state is None:
            state = RunState.fold(self._runs.recent(schedule.id, 1_000_000))
        slot = Slot(schedule, state)
        if state.dangling is not None and not self.passive:
            self._interrupted(slot, state.dangling)
        return slot

    def faults(self) -> dict[str, str]:
        """Schedules set aside because their due times could not be computed, with why."""
        return {k: slot.fault for k, slot in sorted(self._slots.items()) if slot.fault}

    def _set_aside(self, slot: Slot, exc: Exception) -> None:
        """Stop timing ``slot`` (its due times raised ``exc``); the loop goes on for the rest.

        ``timing.next_due`` cannot overflow for a validated schedule (``bounds``); this is
        the guard for whatever else may raise, so one schedule never ends the loop.
        """
        slot.next = None
        slot.fault = f"its next due time could not be computed: {type(exc).__name__}: {exc}"
        log.error("schedule %s set aside: %s", slot.schedule.id, slot.fault, exc_info=exc)

    def reset(
        self, schedules: Sequence[Schedule], states: dict[str, RunState] | None = None
    ) -> None:
        """Forget every schedule and take ``schedules`` again, their run logs read afresh.

        What a node does when it becomes the scheduler's leader: the previous leader's runs
        (and a run it left unfinished) are then in this node's cursors. ``states``: what
        ``read_states`` returned for them just now (read here when not given).
        """
        self._slots.clear()
        for schedule in schedules:
            self.put(schedule, (states or {}).get(schedule.id))

    def remove(self, schedule_id: str) -> None:
        """Forget a schedule (a declared one no longer declared): it never starts again.

        A run in progress finishes (its retries stop: ``attempts``) and its lines go to the
        run log, which stays; a declared one gets a ``removed`` line (``declared``).
        """
        slot = self._slots.retire(schedule_id)  # kept aside while its run goes on
        if slot is None:
            return
        slot.next = None
        if slot.schedule.declared_in is not None and not self.passive:
            try:  # it is removed all the same: not known, never started again
                self._append(slot, {"status": "removed", "reason": removal(slot.schedule)})
            except OSError as exc:
                log.error("schedule %s: its removal could not be logged: %s", schedule_id, exc)
        self._changed.set()

    def _interrupted(self, slot: Slot, run: Dangling) -> None:
        """A run the log shows started and never ended (``catch_up.interrupted``)."""
        line, again = interrupted(slot.schedule, run, removed=slot.state.removed)
        self._append(slot, line)
        if again:
            slot.resume = run

    # --- the loop ----------------------------------------------------------------------------

    def next_wake(self) -> datetime | None:
        """The earliest due time of an idle active schedule (None: nothing to wait for)."""
        times = [
            slot.next
            for slot in self._slots.values()
            if slot.next is not None and slot.task is None and slot.schedule.status == "active"
        ]
        return min(times, default=None)

    def tick(self) -> int:
        """Start every run that is due now; how many were started."""
        now = self._clock.now()
        started = 0
        for slot in list(self._slots.values()):
            if slot.task is not None or slot.schedule.status != "active":
                continue
            if slot.resume is not None:
                run, slot.resume = slot.resume, None
                self._start(slot, run.due, run.attempt + 1)
                started += 1
            elif slot.next is not None and slot.next <= now:
                try:
                    started += self._due(slot, now)
                except Exception as exc:  # see ``_set_aside``
                    self._set_aside(slot, exc)
        return started

    def _due(self, slot: Slot, now: datetime) -> int:
        """Start the newest passed due time if within its grace; the rest are missed."""
        assert slot.next is not None
        due = passed(slot.schedule, slot.next, now, grace_seconds(slot.schedule, self.settings))
        slot.next = due.next
        if due.missed:
            self._append(
                slot,
                {"status": "missed", "due": to_ms(due.last_missed), "first_due": to_ms(due.first),
                 "count": due.missed, "next_run_at": _ms(slot.next),
                 "error": "not run: the server was down or busy at that time"},
            )  # fmt: skip
        if due.run is not None:
            self._start(slot, due.run, 1)
            return 1
        if isinstance(slot.schedule.timing, At):
            self._complete(slot)
        return 0

    def _start(self, slot: Slot, due: datetime, attempt: int) -> None:
        key = to_ms(due)
        if key in slot.seen and attempt == 1:  # defensive: never twice in one process
            log.error("schedule %s: due time %s was started already", slot.schedule.id, due)
            return
        slot.seen.add(key)
        slot.state.cursor = max(slot.state.cursor or due, due)
        claim = attempt == 1 and self._claims is not None
        slot.task = asyncio.create_task(self._run(slot, due, attempt, claim=claim))

    async def _run(self, slot: Slot, due: datetime, attempt: int, *, claim: bool) -> None:
        try:
            if claim and not await self._claim(slot.schedule, due):
                return
            await self._attempts_recorded(slot, due, attempt)
        finally:
            slot.task = None
            self._slots.ended(slot)
            self._changed.set()

    async def _claim(self, s: Schedule, due: datetime) -> bool:
        """Whether this node starts ``due``: claimed in the database (``claiming``)."""
        assert self._claims is not None
        grace = grace_seconds(s, self.settings)
        return await claim_in_grace(self._claims, s.id, due, self._clock, grace)

    async def _attempts_recorded(self, slot: Slot, due: datetime, attempt: int) -> None:
        """The attempts, with the run recorded interrupted if the server stops meanwhile."""
        try:
            async with self._limit:
                await self._attempts(slot, due, attempt)
        except asyncio.CancelledError:
            self._append(slot, {"status": "interrupted", "due": to_ms(due),
                                "error": "the server stopped during the run"})  # fmt: skip
            raise
        except Exception:
            log.exception("schedule %s: run for %s failed", slot.schedule.id, due)

    async def _attempts(self, slot: Slot, due: datetime, attempt: int) -> None:
        """The run's attempts (``attempts``), then its outcome line."""
        s = slot.schedule
        started = self._clock.now()
        ran = await run_attempts(
            s,
            due,
            attempt,
            current=lambda: slot.schedule,
            wanted=lambda: self.get(s.id) is not None and slot.schedule.status == "active",
            payloads=self._payloads,
            clock=self._clock,
            rng=self._rng,
            append=partial(self._append_off_loop, slot),
        )
        if ran is None:
            return
        duration = int((self._clock.now() - started).total_seconds() * 1000)
        await self._append_off_loop(slot, outcome(*ran, due, duration, _ms(slot.next)))
        if isinstance(s.timing, At):
            self._complete(slot)

    def _complete(self, slot: Slot) -> None:
        slot.schedule = slot.schedule.with_status("completed")
        slot.next = None
        try:
            self.on_status(slot.schedule)
        except (OSError, ConfigError):
            log.exception("schedule %s: could not record it completed", slot.schedule.id)

    def _append(self, slot: Slot, entry: dict[str, object]) -> None:
        """Record a decision of the loop (not awaited with a database: ``run_writes``)."""
        now = self._clock.now()
        line = {"ts": to_ms(now)} | {k: v for k, v in entry.items() if v is not None}
        self._writes.write_behind(slot.schedule.id, line)
        self._applied(slot, line, now)

    async def _append_off_loop(self, slot: Slot, entry: dict[str, object]) -> None:
        """Record a step of a run, in the log before the run goes on (``run_writes``)."""
        now = self._clock.now()
        line = {"ts": to_ms(now)} | {k: v for k, v in entry.items() if v is not None}
        await self._writes.write(slot.schedule.id, line)
        self._applied(slot, line, now)

    def _applied(self, slot: Slot, line: dict[str, object], now: datetime) -> None:
        slot.state.apply(line)
        if self.metrics is not None:
            count_line(self.metrics, line, now)

    async def run_forever(self) -> None:
        """The loop: start what is due, sleep until the next due time or a change."""
        while True:
            self._changed.clear()
            self.tick()
            await self._clock.wait_until(self.next_wake(), self._changed)

    def run_now(self, schedule_id: str) -> bool:
        """Start a run for the schedule now, outside its timing; False if one is running."""
        slot = self._slots[schedule_id]
        if slot.task is not None:
            return False
        self._start(slot, self._clock.now(), 1)
        return True

    async def drain(self) -> None:
        """Wait until no run is in progress (tests, shutdown)."""
        while tasks := self._slots.running():
            await asyncio.wait(tasks)

    async def start(self, schedules: Sequence[Schedule]) -> None:
        """Take ``schedules`` and start the loop (as a task)."""
        for schedule in schedules:
            self.put(schedule)
        self._loop = asyncio.create_task(self.run_forever(), name="scheduler")

    async def stop(self) -> None:
        """Stop the loop; runs in progress are cancelled and recorded as interrupted."""
        tasks = self._slots.running()
        if self._loop is not None:
            tasks.append(self._loop)
            self._loop = None
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._writes.flush(within_seconds=STOP_FLUSH_SECONDS)


def _ms(when: datetime | None) -> int | None:
    return None if when is None else to_ms(when)
