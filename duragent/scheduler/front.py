"""``Schedules``: the scheduler as a service of ``duragent serve``, and the operations on it.

It owns the schedules (``.duragent/schedules`` files, or the database's ``schedules`` table
with ``store.backend: postgres``, so every node sees the same), the agents' declared schedules
(``spec.schedules[]``; taken again when the agents are reloaded: ``take_declared``), the loop
(``service.Scheduler``) and the payload runner (``chat.ChatPayloads``). The ``schedule`` tool,
HTTP ``/api/v1/schedules`` and the CLI all go through its few operations (``new`` + ``add``,
``cancel``, ``listing``, ``run_now``…), which check what a caller may do (an agent only touches
its own schedules; a chat only those delivering to it: ``caller``, see ``reaches``) and write
files before the loop sees the change.

Loading never deletes or rewrites a file it cannot read: it is skipped, moved aside with its
reason and reported (``loading``), and every other schedule runs. A scheduler that cannot
run (its start failed, its loop ended) says so (``down``: ``/readyz`` is 503) and refuses new
schedules and runs (``SchedulerUnavailableError``: HTTP 503) rather than accept work it will
not do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from duragent.agents import AgentCatalog
from duragent.core.caller import OPERATOR, Caller
from duragent.core.ids import new_ulid
from duragent.errors import ConfigError
from duragent.frontkit import OutboundPort
from duragent.scheduler.bounds import TimingProblem
from duragent.scheduler.chat import ChatPayloads
from duragent.scheduler.clock import Clock, SystemClock
from duragent.scheduler.declared import NOT_LEADING
from duragent.scheduler.errors import (
    ScheduleNotFoundError,
    ScheduleRefusedError,
    SchedulerUnavailableError,
)
from duragent.scheduler.leading import SchedulerLeadership, take_changes, take_declared
from duragent.scheduler.loading import DECLARED_EPOCH, ScheduleLoader, declared_id
from duragent.scheduler.model import (
    At,
    Destination,
    Payload,
    Retry,
    Schedule,
    Timing,
    reaches,
    schedule_document,
)
from duragent.scheduler.runs import RunState
from duragent.scheduler.service import PayloadRunner, Scheduler, SchedulerSettings
from duragent.scheduler.timing import check_timing
from duragent.store.cluster import Cluster
from duragent.store.protocols import RunLogStorage, ScheduleStorage
from duragent.store.schedule_files import RunLogFiles, ScheduleFiles
from duragent.turns import TurnRunner

__all__ = ["DECLARED_EPOCH", "Schedules", "declared_id"]

log = logging.getLogger(__name__)


class Schedules:
    """The scheduler front end (see module docstring)."""

    def __init__(
        self,
        directory: Path,
        *,
        agents: Callable[[], AgentCatalog],
        settings: SchedulerSettings | None = None,
        payloads: PayloadRunner | None = None,
        turns: TurnRunner | None = None,
        outbound: Callable[[str], OutboundPort | None] = lambda name: None,
        clock: Clock | None = None,
        storage: tuple[ScheduleStorage, RunLogStorage] | None = None,
        cluster: Cluster | None = None,
    ) -> None:
        """The scheduler over ``directory``'s files, or over ``storage``.

        ``storage``: schedules and run logs every node shares (None: ``directory``'s files);
        ``cluster``: with several nodes, the loop runs on the scheduler's leader only and
        each due time is claimed once (None or files: this process alone, as before).
        """
        self.files: ScheduleStorage = ScheduleFiles(directory)
        self.runs: RunLogStorage = RunLogFiles(directory / "runs")
        self._described = "the schedule files"
        if storage is not None:
            self.files, self.runs = storage
            self._described = "the database"
        self._cluster = cluster if cluster is not None and cluster.shared else None
        self._tasks: list[asyncio.Task[None]] = []
        self._leadership: SchedulerLeadership | None = None
        self._taking = asyncio.Lock()  # one ``take_declared`` at a time
        self._creating = asyncio.Lock()  # one quota-checked create at a time
        self._loader = ScheduleLoader(self.files, agents)
        self._failure: str | None = None
        self._agents = agents
        self.clock = clock or SystemClock()
        self.chat: ChatPayloads | None = None
        if payloads is None:
            if turns is None:
                raise ValueError("Schedules needs payloads or turns")
            self.chat = payloads = ChatPayloads(turns, outbound)
        self.scheduler = Scheduler(
            self.runs,
            payloads,
            self.clock,
            settings,
            claims=self._cluster.runs if self._cluster is not None else None,
        )
        self.scheduler.on_status = self._write
        self.scheduler.metrics = turns.metrics if turns is not None else None

    @property
    def problems(self) -> list[ConfigError]:
        """What the last ``load`` skipped, each naming file and field (``loading``)."""
        return self._loader.problems

    def skipped(self) -> list[dict[str, str]]:
        """Every schedule set aside (skipped, moved aside), with why: ``/readyz`` shows it."""
        faults = self.scheduler.faults()
        timed = [{"record": f"schedule {k}", "reason": v} for k, v in faults.items()]
        return self._loader.report() + timed

    def down(self) -> str | None:
        """Why the scheduler cannot run schedules now, or None (``/readyz``, refusals)."""
        if self._failure is not None:
            return self._failure
        for task in [self.scheduler.loop, *self._tasks]:
            if task is not None and task.done() and not task.cancelled():
                exc = task.exception()
                if exc is not None:
                    return f"the scheduler's loop ended: {type(exc).__name__}: {exc}"
        return None

    # --- service ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Load every schedule (stored and declared) and start the loop.

        With several nodes the loop runs on the holder of the ``scheduler`` leader lease;
        every node keeps the schedules (listings, the ``schedule`` tool) and re-reads them
        (``leading``), so a schedule created or cancelled on another node is seen.
        A start that fails is remembered (``down``): new schedules are then refused.
        """
        self._failure = None
        try:
            await self._start()
        except Exception as exc:
            self._failure = f"the scheduler did not start: {type(exc).__name__}: {exc}"
            raise

    async def _start(self) -> None:
        if self._cluster is None:
            await self.scheduler.start(self.load())
            return
        leadership = SchedulerLeadership(self.scheduler, self._cluster, self.load, self._described)
        self._leadership = leadership
        self._tasks = await leadership.start()

    async def take_declared(self) -> str | None:
        """Take the schedules the agents declare now (after a reload), as ``declared`` says.

        One node: at once (``leading.take_declared``). Several: every schedule is re-read at
        once (``leading``); a note when another node runs the loop (the reload's answer shows
        it). Raises ``OSError`` when a run log or the database cannot be read.
        """
        if self._leadership is not None:
            await self._leadership.refresh()
            return NOT_LEADING if self.scheduler.passive else None
        async with self._taking:
            await take_declared(self.scheduler, self.declared())
        return None

    def refresh(
        self, loaded: list[Schedule] | None = None, states: dict[str, RunState] | None = None
    ) -> None:
        """Take the schedules created, changed or removed elsewhere (``leading.take_changes``).

        ``loaded``: what ``load`` returned just now (read again when not given); ``states``:
        the run states of the new ones among them (read from the run logs when not given).
        """
        take_changes(self.scheduler, self.load() if loaded is None else loaded, states)

    async def stop(self) -> None:
        """Stop the loop; runs in progress are recorded as interrupted."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.scheduler.stop()

    def load(self) -> list[Schedule]:
        """Every usable schedule; bad ones set aside and reported (``loading``)."""
        return self._loader.load()

    def declared(self) -> list[Schedule]:
        """The schedules agents declare in ``spec.schedules[]``."""
        return self._loader.declared()

    # --- operations ---------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def creating(self) -> AsyncIterator[None]:
        """Hold while a create is checked against what exists and written (one at a time).

        With several nodes the schedules are re-read first: the chat's session may come from
        a node that made some a moment ago (raises ``OSError`` if the database is away).
        """
        async with self._creating:
            if self._leadership is not None:
                await self._leadership.refresh()
            yield

    def add(self, schedule: Schedule) -> Schedule:
        """Write ``schedule`` (from ``new``) and hand it to the loop; see ``add_async``."""
        self._write(schedule)
        self.scheduler.put(schedule, RunState())  # a new id has no runs to read
        return schedule

    async def add_async(self, schedule: Schedule) -> Schedule:
        """``add``, the write made from a thread (the database may be slow or away)."""
        await asyncio.to_thread(self._write, schedule)
        self.scheduler.put(schedule, RunState())
        return schedule

    def new(
        self,
        *,
        agent: str,
        timing: Timing,
        payload: Payload,
        destination: Destination | None = None,
        created_by_session: str | None = None,
        retry: Retry | None = None,
        process_handle: str | None = None,
    ) -> Schedule:
        """A new schedule, checked and not yet written.

        Refused with ``SchedulerUnavailableError`` when the scheduler cannot run it
        (``down``), ``ConfigError`` naming the field when its timing is out of range
        (``timing.check_timing``: what the tool and HTTP checked already, checked here for
        every caller) and for a past ``at`` (a bad value: 400), ``ScheduleRefusedError`` for
        an unknown agent.
        """
        down = self.down()
        if down is not None:
            raise SchedulerUnavailableError(f"{down}; no schedule can be created now")
        problem = check_timing(timing)
        if problem is not None:
            raise _invalid(timing, problem)
        now = self.clock.now()
        if isinstance(timing, At) and timing.at <= now:  # a bad value (400), not a refusal
            raise _invalid(
                timing,
                TimingProblem(
                    "at",
                    f"'at' must be in the future (it is {timing.at.isoformat()}, now is "
                    f"{now.isoformat()})",
                    "give a time after now, with its offset (e.g. 2030-01-01T09:00:00Z)",
                ),
            )
        if agent not in self._agents().agents:
            raise ScheduleRefusedError(f"no agent named '{agent}'")
        return Schedule(
            id=f"sched_{new_ulid(int(now.timestamp() * 1000))}",
            agent=agent,
            timing=timing,
            payload=payload,
            created_at=now,
            destination=destination,
            created_by_session=created_by_session,
            retry=retry,
            process_handle=process_handle,
        )

    def get(
        self, schedule_id: str, *, agent: str | None = None, caller: Caller = OPERATOR
    ) -> Schedule:
        """The schedule (``agent``'s own when given; one ``caller`` reaches: else "not found")."""
        schedule = self.scheduler.get(schedule_id)
        if schedule is None or (agent is not None and schedule.agent != agent):
            raise ScheduleNotFoundError(schedule_id)
        if not reaches(caller, schedule):
            raise ScheduleNotFoundError(schedule_id)
        return schedule

    def listing(
        self, *, agent: str | None = None, active_only: bool = False, caller: Caller = OPERATOR
    ) -> list[Schedule]:
        """Schedules, by id (``agent``'s only; active ones only; those ``caller`` reaches)."""
        return [
            s
            for s in self.scheduler.schedules()
            if (agent is None or s.agent == agent)
            and (not active_only or s.status == "active")
            and reaches(caller, s)
        ]

    def state(self, schedule_id: str) -> RunState:
        """Its durable run state."""
        self.get(schedule_id)
        return self.scheduler.state(schedule_id)

    def history(self, schedule_id: str, limit: int = 50) -> list[dict[str, object]]:
        """Its last run-log lines, oldest first (blocking: see ``history_async``)."""
        self.get(schedule_id)
        return self.scheduler.history(schedule_id, limit)

    async def history_async(self, schedule_id: str, limit: int = 50) -> list[dict[str, object]]:
        """``history``, read from a thread."""
        self.get(schedule_id)
        return await asyncio.to_thread(self.scheduler.history, schedule_id, limit)

    def cancel(
        self, schedule_id: str, *, agent: str | None = None, caller: Caller = OPERATOR
    ) -> Schedule:
        """Mark it cancelled (file first); a run in progress finishes (see ``cancel_async``)."""
        cancelled = self._cancelled(schedule_id, agent, caller)
        self._write(cancelled)
        self.scheduler.put(cancelled)
        return cancelled

    async def cancel_async(
        self, schedule_id: str, *, agent: str | None = None, caller: Caller = OPERATOR
    ) -> Schedule:
        """``cancel``, the write made from a thread."""
        cancelled = self._cancelled(schedule_id, agent, caller)
        await asyncio.to_thread(self._write, cancelled)
        self.scheduler.put(cancelled)
        return cancelled

    def _cancelled(self, schedule_id: str, agent: str | None, caller: Caller) -> Schedule:
        """The schedule as cancelled (not yet written); a declared one is refused.

        The refusal names the agent, not the file: chats read it, and never a server path.
        """
        schedule = self.get(schedule_id, agent=agent, caller=caller)
        if schedule.declared_in is not None:
            raise ScheduleRefusedError(
                f"schedule '{schedule_id}' is declared in the agent.yaml of agent "
                f"'{schedule.agent}': its operator can remove it from spec.schedules there"
            )
        if schedule.created_by_session is None and not caller.reaches_all:
            raise ScheduleRefusedError(  # made over HTTP or the CLI: the operator's decision
                f"schedule '{schedule_id}' was made by the operator of agent "
                f"'{schedule.agent}': only they can cancel it (duragent schedule cancel)"
            )
        return schedule.with_status("cancelled")

    def cancel_linked(self, process_handle: str, *, agent: str) -> list[str]:
        """Cancel ``agent``'s active schedules linked to a background job that ended.

        The reference's ``cancel_by_process_handle``: a schedule created with
        ``process_handle`` watches that job, and stops with it. The ids cancelled.
        """
        cancelled = []
        for schedule in self.listing(agent=agent, active_only=True):
            if schedule.process_handle == process_handle and schedule.declared_in is None:
                self.cancel(schedule.id, agent=agent)
                cancelled.append(schedule.id)
                log.info("schedule %s cancelled: process %s ended", schedule.id, process_handle)
        return cancelled

    def run_now(self, schedule_id: str) -> bool:
        """Start a run now (outside its timing); False if one is in progress.

        Only an active schedule runs (a cancelled or completed one is refused). A one-shot
        run now is done: it completes and does not run again at its time.
        """
        schedule = self.get(schedule_id)
        if schedule.status != "active":
            raise ScheduleRefusedError(f"schedule '{schedule_id}' is {schedule.status}")
        down = self.down()
        if down is not None:
            raise SchedulerUnavailableError(f"{down}; schedule '{schedule_id}' cannot run now")
        return self.scheduler.run_now(schedule_id)

    def _write(self, schedule: Schedule) -> None:
        if schedule.declared_in is None:
            self.files.put(schedule.id, schedule_document(schedule))


def _invalid(timing: Timing, problem: TimingProblem) -> ConfigError:
    """``problem`` as the error naming the field, its value and the range allowed."""
    value = getattr(timing, problem.field)
    return ConfigError(
        problem.reason,
        field=f"schedule.{type(timing).__name__.lower()}.{problem.field}",
        value=value.isoformat() if hasattr(value, "isoformat") else value,
        allowed=problem.allowed,
        fix=problem.fix,
    )
