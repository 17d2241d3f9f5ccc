"""Schedules shared by several nodes on PostgreSQL: each due time fires once cluster-wide.

Real PostgreSQL, one schema per test; each "node" is its own pool of connections and its own
scheduler, as two ``duragent serve`` processes would have.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections import Counter
from collections.abc import Callable, Coroutine, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from duragent.agents import AgentCatalog, load_catalog
from duragent.agents.access_spec import QuotaSpec
from duragent.core.caller import Caller, ChatRef
from duragent.scheduler import Destination, Every, ManualClock, Schedules, ScheduleTool
from duragent.scheduler.clock import SystemClock
from duragent.scheduler.declared import NOT_LEADING
from duragent.scheduler.model import schedule_document
from duragent.scheduler.service import Scheduler
from duragent.store.cluster import Cluster
from duragent.tools.base import ToolContext
from tests.polling import eventually
from tests.scheduler.rig import START, RecordingPayloads, schedule

postgres_db = pytest.importorskip("tests.store.postgres_db")

from duragent.store.postgres import (  # noqa: E402
    Database,
    PostgresRunLog,
    PostgresSchedules,
    migrate,
    postgres_cluster,
)


@contextmanager
def shared_schema() -> Iterator[str]:
    with postgres_db.fresh_schema() as schema:
        yield schema


def open_db(stack: ExitStack, schema: str, dsn: str | None = None) -> Database:
    db = stack.enter_context(postgres_db.database(schema))
    if dsn is not None:  # through a relay that a test can cut (a node losing the database)
        db = Database(dsn, schema=schema, max_size=4, connect_timeout=1)
        stack.callback(db.close)
    db.open()
    migrate(db)
    return db


def node_scheduler(db: Database, name: str, clock: ManualClock) -> tuple[Scheduler, Cluster]:
    cluster = postgres_cluster(db, name, lease_seconds=30)
    payloads = RecordingPayloads()
    return Scheduler(PostgresRunLog(db), payloads, clock, claims=cluster.runs), cluster


async def test_two_nodes_that_both_find_a_due_time_due_start_it_once() -> None:
    with shared_schema() as schema, ExitStack() as stack:
        clock = ManualClock(START)
        nodes = [node_scheduler(open_db(stack, schema), n, clock)[0] for n in ("a", "b")]
        for s in nodes:
            s.put(schedule("sched_daily"))
        for day in range(1, 4):
            clock.set(START.replace(hour=9) + timedelta(days=day - 1))
            for s in nodes:  # both believe they lead (one was paused past its lease)
                s.tick()
            for s in nodes:
                await s.drain()
        runs = [r for s in nodes for r in s._payloads.runs]  # type: ignore[attr-defined]
        assert sorted(Counter(runs).values()) == [1, 1, 1]  # three due times, each once


def make_schedules(
    db: Database,
    name: str,
    lease: float,
    clock: object,
    payloads: RecordingPayloads | None = None,
    catalog: AgentCatalog | None = None,
) -> Schedules:
    cluster = postgres_cluster(db, name, lease_seconds=lease)
    return Schedules(
        Path("/nonexistent/schedules"),  # never read: the database holds the schedules
        agents=AgentCatalog if catalog is None else (lambda: catalog),
        payloads=payloads or RecordingPayloads(),
        clock=clock,  # type: ignore[arg-type]
        storage=(PostgresSchedules(db), PostgresRunLog(db)),
        cluster=cluster,
    )


async def test_a_schedule_created_on_one_node_is_seen_by_the_others() -> None:
    with shared_schema() as schema, ExitStack() as stack:
        clock = ManualClock(START)
        a = make_schedules(open_db(stack, schema), "a", 30, clock)
        b = make_schedules(open_db(stack, schema), "b", 30, clock)
        await a.start()
        await b.start()
        try:
            made = schedule("sched_shared", Every(3600))
            a.files.put(made.id, schedule_document(made))
            a.refresh()
            b.refresh()
            assert [s.id for s in b.listing()] == ["sched_shared"]
            cancelled = made.with_status("cancelled")
            b.files.put(made.id, schedule_document(cancelled))
            a.refresh()
            assert a.get("sched_shared").status == "cancelled"
        finally:
            await a.stop()
            await b.stop()


class NodeThread:
    """A node's scheduler on an event loop of its own (as a process of its own has)."""

    def __init__(self, schedules: Schedules) -> None:
        self.schedules = schedules
        self.payloads: RecordingPayloads = schedules.scheduler._payloads  # type: ignore[assignment]
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def call(self, coro: Coroutine[Any, Any, None]) -> None:
        asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=60)

    def close(self) -> None:
        self.call(self.schedules.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


def fires(node: NodeThread) -> list[tuple[datetime, int]]:
    """(due time, attempt) of every payload run on ``node``."""
    payloads = node.payloads
    return [(due, n) for (_, due), n in zip(payloads.runs, payloads.attempts, strict=True)]


async def two_ticking_nodes(
    stack: ExitStack,
    schema: str,
    relay: Any,
    lease: float,
    period: int,
    payloads: RecordingPayloads | None = None,
) -> tuple[NodeThread, NodeThread]:
    """Node a (through ``relay``, which a test cuts) leading a schedule due every ``period``
    seconds, and node b following; both started, sharing one schema."""
    a_db = open_db(stack, schema, relay.dsn)
    a = NodeThread(make_schedules(a_db, "a", lease, SystemClock(), payloads))
    b = NodeThread(make_schedules(open_db(stack, schema), "b", lease, SystemClock()))
    now = datetime.now(UTC)
    every = schedule("sched_tick", Every(period), created=now.replace(microsecond=0))
    a.schedules.files.put(every.id, schedule_document(every))
    a.call(a.schedules.start())
    await asyncio.sleep(lease / 2)  # a leads
    b.call(b.schedules.start())
    return a, b


async def test_when_the_leading_node_dies_another_fires_the_next_due_times_none_twice() -> None:
    """Each due time is claimed by one node; the one the cut interrupted is attempted again.

    A run whose ``running`` line a wrote just before the cut, and whose outcome line it could
    not write, is an interrupted run to b (``catch_up.interrupted``): b attempts it again
    (attempt 2, which finds in the session what attempt 1 wrote). That is the one due time
    that may run on both nodes, and only as such a second attempt.
    """
    lease = 0.4
    period = 1
    with shared_schema() as schema, ExitStack() as stack:
        relay = postgres_db.Outage()
        stack.callback(relay.down)
        a, b = await two_ticking_nodes(stack, schema, relay, lease, period)
        try:
            await asyncio.sleep(1.7 * period)
            relay.down()  # a loses the database: it cannot renew, stops; b takes over
            await asyncio.sleep(2.2 * period)
        finally:
            b.close()
            a.close()
        on_a, on_b = fires(a), fires(b)
        print(f"fires on a: {on_a}\nfires on b: {on_b}")
        assert on_a
        assert on_b
        first_attempts = sorted(due for due, attempt in on_a + on_b if attempt == 1)
        assert len(first_attempts) == len(set(first_attempts))  # each claimed once
        again = [due for due, attempt in on_b if attempt > 1]
        assert len(again) <= 1  # only the run the cut interrupted
        assert set(again) <= {due for due, _ in on_a}
        dues = sorted({due for due, _ in on_a + on_b})
        steps = {(later - earlier).total_seconds() for earlier, later in itertools.pairwise(dues)}
        assert steps == {float(period)}  # none missed: every due time between first and last


class CutMidRun(RecordingPayloads):
    """a's payloads: the database goes away while the ``cut_at``-th run is running."""

    def __init__(self, relay: Any, cut_at: int) -> None:
        super().__init__()
        self.relay = relay
        self.cut_at = cut_at

    async def run(self, schedule: Any, due: datetime, record: Any, attempt: int = 1) -> Any:
        report = await super().run(schedule, due, record, attempt)
        if len(self.runs) == self.cut_at:
            self.relay.down()  # its ``running`` line is written; its outcome cannot be
        return report


async def test_a_run_the_leaders_outage_interrupts_is_attempted_again_once_by_the_next_leader() -> (
    None
):
    lease = 0.4
    period = 1
    with shared_schema() as schema, ExitStack() as stack:
        relay = postgres_db.Outage()
        stack.callback(relay.down)
        cutter = CutMidRun(relay, cut_at=1)
        a, b = await two_ticking_nodes(stack, schema, relay, lease, period, cutter)
        try:
            assert await eventually(lambda: len(fires(b)) >= 2, within=30)
        finally:
            b.close()
            a.close()
        (cut, attempt), *_ = fires(a)
        assert attempt == 1
        assert fires(b)[0] == (cut, 2)  # the interrupted due time, as its second attempt
        assert [n for _, n in fires(b)[1:]] == [1] * (len(fires(b)) - 1)  # then new ones


async def test_a_database_outage_while_leading_stops_no_loop_and_blocks_no_event_loop() -> None:
    """A blip of the database at a due time: the runs go on afterwards, the loop stays free.

    The claim of a due time is a database write; made on the event loop it stalled every
    other task for the pool's timeout, and its error killed the scheduler's loop for good
    (the lease was still held, so no other node took over either).
    """
    period = 1
    with shared_schema() as schema, ExitStack() as stack:
        relay = postgres_db.Outage()
        stack.callback(relay.down)
        a = make_schedules(open_db(stack, schema, relay.dsn), "a", 30, SystemClock())
        now = datetime.now(UTC)
        every = schedule("sched_tick", Every(period), created=now.replace(microsecond=0))
        a.files.put(every.id, schedule_document(every))
        stalls: list[float] = []

        async def watch_the_loop() -> None:
            loop = asyncio.get_running_loop()
            while True:
                before = loop.time()
                await asyncio.sleep(0.01)
                stalls.append(loop.time() - before - 0.01)

        watcher = asyncio.create_task(watch_the_loop())
        await a.start()
        try:
            await asyncio.sleep(1.5 * period)
            relay.down()
            await asyncio.sleep(2.5 * period)
            relay.up()
            await asyncio.sleep(3 * period)
        finally:
            watcher.cancel()
            await a.stop()
        runs = a.scheduler._payloads.runs  # type: ignore[attr-defined]
        after_the_outage = [due for _, due in runs if due > now + timedelta(seconds=4.5)]
        print(f"runs: {len(runs)}, after the outage: {len(after_the_outage)}")
        print(f"longest event-loop stall: {max(stalls) * 1000:.0f} ms")
        assert after_the_outage  # the loop lived through the outage
        assert max(stalls) < 0.5  # no database wait on the event loop (the pool waits ~1 s)


KEEPER = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: helper
spec:
  model:
    provider: offline
    name: duragent-offline
  schedules:
    - name: keeper
      schedule: {every: {every_seconds: 60}}
      payload: {message: {message: "tick"}}
"""
ADDED = """\
    - name: added
      schedule: {every: {every_seconds: 60}}
      payload: {message: {message: "tock"}}
"""


def ran_count(ran: list[tuple[str, datetime]], count: int) -> bool:
    return len(ran) == count


def declaring(root: Path, text: str) -> AgentCatalog:
    """The catalog of one agent file (``helper``) as a reload of it reads it."""
    folder = root / "agents" / "helper"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agent.yaml").write_text(text)
    catalog = load_catalog(root / "agents")
    assert not catalog.broken, catalog.broken
    return catalog


async def test_a_reload_on_the_leading_node_takes_declared_schedules_and_others_say_so(
    tmp_path: Path,
) -> None:
    with shared_schema() as schema, ExitStack() as stack:
        clock = ManualClock(START + timedelta(seconds=30))
        keeper = declaring(tmp_path / "k", KEEPER)
        added = declaring(tmp_path / "a", KEEPER + ADDED)
        catalogs = {"a": keeper, "b": keeper}  # each node's own agent files

        def node(name: str) -> Schedules:
            db = open_db(stack, schema)
            return Schedules(
                Path("/nonexistent/schedules"),
                agents=lambda: catalogs[name],
                payloads=RecordingPayloads(),
                clock=clock,
                storage=(PostgresSchedules(db), PostgresRunLog(db)),
                cluster=postgres_cluster(db, name, lease_seconds=30),
            )

        a, b = node("a"), node("b")
        await a.start()
        assert await eventually(lambda: not a.scheduler.passive)  # the first to start leads
        await b.start()
        try:
            catalogs["b"] = added  # reloaded on b only: listed there, and b says who runs it
            assert await b.take_declared() == NOT_LEADING
            assert [s.id for s in b.listing()] == ["decl_helper_added", "decl_helper_keeper"]
            assert [s.id for s in a.listing()] == ["decl_helper_keeper"]
            catalogs["a"] = added  # reloaded on the leader: run from its next due time
            assert await a.take_declared() is None
            ran = a.scheduler._payloads.runs  # type: ignore[attr-defined]
            clock.set(START + timedelta(minutes=1))
            assert await eventually(lambda: len(ran) == 2)
            catalogs["a"] = catalogs["b"] = keeper  # removed everywhere: it never runs again
            assert await a.take_declared() is None
            assert await b.take_declared() == NOT_LEADING
            for minutes in (2, 3):
                clock.set(START + timedelta(minutes=minutes))
                assert await eventually(partial(ran_count, ran, minutes + 1))
            assert b.scheduler._payloads.runs == []  # type: ignore[attr-defined]
        finally:
            await b.stop()
            await a.stop()
        assert sorted(ran) == [
            ("decl_helper_added", START + timedelta(minutes=1)),
            *[("decl_helper_keeper", START + timedelta(minutes=m)) for m in (1, 2, 3)],
        ]
        lines = a.runs.recent("decl_helper_added", 100)
        assert [line["status"] for line in lines] == ["registered", "running", "ok", "removed"]


async def test_a_chats_quota_counts_the_schedules_another_node_made_just_now(
    write_agent: Callable[..., Path], tmp_path: Path
) -> None:
    """The chat's session moved to node b (a died, or handed it on) before b re-read the
    schedules: b's quota check must count what a made from the chat, not b's old copy."""
    write_agent("helper")
    catalog = load_catalog(tmp_path / ".duragent" / "agents")
    chat = Destination("telegram", "42")

    async def chat_of(session_id: str) -> Destination | None:
        return chat

    context = ToolContext(
        caller=Caller(role="member", chat=ChatRef("telegram", "42"), sender_id="7"),
        session_id="chat-session", agent_name="helper", agent_dir=tmp_path,
        workspace_dir=tmp_path, world_memory_dir=tmp_path,
    )  # fmt: skip
    create = {"action": "create", "every_seconds": 3600, "task": "post"}
    with shared_schema() as schema, ExitStack() as stack:
        clock = ManualClock(START)
        a = make_schedules(open_db(stack, schema), "a", 30, clock, catalog=catalog)
        b = make_schedules(open_db(stack, schema), "b", 30, clock, catalog=catalog)
        await a.start()
        await b.start()
        try:
            on_a = ScheduleTool(a, chat_of, QuotaSpec(schedules_per_chat=2))
            on_b = ScheduleTool(b, chat_of, QuotaSpec(schedules_per_chat=2))
            for _ in range(2):
                assert (await on_a.run(create, context)).success
            refused = await on_b.run(create, context)  # b has not re-read the schedules yet
            assert not refused.success
            assert "quota reached: this chat has 2 active schedules" in refused.content
        finally:
            await a.stop()
            await b.stop()


async def test_a_re_read_that_began_before_a_create_here_does_not_take_it_away() -> None:
    """The periodic re-read reads in a thread: a schedule this node wrote meanwhile is not
    in what it read, and must not be dropped for that (nor a cancel here undone): until the
    next re-read it would not run, or a cancelled one would run."""
    with shared_schema() as schema, ExitStack() as stack:
        a = make_schedules(open_db(stack, schema), "a", 30, ManualClock(START))
        await a.start()
        try:
            leadership = a._leadership
            assert leadership is not None
            real, read, go_on = leadership._load, threading.Event(), threading.Event()

            def read_then_wait() -> list[Any]:
                loaded = real()
                read.set()
                go_on.wait(30)
                return loaded

            leadership._load = read_then_wait
            re_read = asyncio.create_task(leadership.refresh())
            await asyncio.to_thread(read.wait, 30)  # read, not yet taken
            made = await a.add_async(schedule("sched_new", Every(3600)))
            leadership._load = real
            go_on.set()
            await re_read
            assert a.scheduler.get(made.id) is not None
        finally:
            await a.stop()
