"""Run one simulated year and gather what ``report.py`` judges and prints.

The pieces: the fake Telegram and the scripted model live in this process (they outlive
every kill); ``duragent serve`` (``serve.py``: the real runtime with the scheduler on
the shared clock) is a child SIGKILLed and restarted by ``YearCampaign``; ``Probe`` samples
it. After the last message is answered and the clock has reached the end of the year, the
scheduler is given a moment to finish the last due times, the process is stopped, and the
run logs, the serving logs and what the fake recorded are read back.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.year.campaign import REFUSED, YearCampaign, telegram_faults
from bench.year.checks import NoteCounts, log_errors, open_file_problems, tool_checks
from bench.year.clock import ClockDriver
from bench.year.cluster_kills import NodeKill
from bench.year.cluster_report import ClusterFacts, gather
from bench.year.commands import CommandCheck, check_commands
from bench.year.model import YearModel
from bench.year.probe import Probe, Sample, disk_bytes, open_files
from bench.year.schedule import ScheduleCheck, check_schedule
from bench.year.store_view import FileView, StoreView, SwitchedView
from bench.year.store_view_pg import PgView
from bench.year.switch import ClusterPlan, StoreSwitch, SwitchReport, drop_cluster
from bench.year.timing import DAY_MS, START, expected, runs, settle, timing
from bench.year.ttl import OVERRUN_HOLD, OVERRUN_HOURS, TtlCheck, check_ttl, ttl_hours_for
from bench.year.workspace import TOKEN
from bench.year.world import World
from duragent.frontkit.rates import RATE_FIELD
from duragent.testing import FakeTelegram
from duragent.testing.campaign_verdict import (
    INTERRUPTED,
    CampaignResult,
    answer_tokens,
    plan,
    verdict,
)
from duragent.testing.serve_nodes import ServeNodes
from duragent.testing.serve_process import ServeProcess
from duragent.testing.telegram_campaign import dump_calls

__all__ = ["DAY_MS", "YearConfig", "YearResult", "run_year"]

SOURCE = Path(__file__).resolve().parents[2]
"""The folder holding ``bench``: on the serving child's ``PYTHONPATH`` (it runs ``serve.py``)."""


@dataclass
class YearConfig:
    days: float = 365.0
    messages: int = 100_000
    chats: int = 250
    group_every: int = 5
    """One chat in ``group_every`` is a group: 50 groups and 200 DMs of 250 chats."""
    kills: int = 50
    seed: int = 1
    every_seconds: int = 4 * 3600
    """The recurring scheduled task's interval (simulated)."""
    pulse_days: int = 7
    """Days of a second recurring task every 15 simulated minutes (0: none), from the 2nd of
    the month in the middle of the simulated span (kills land there)."""
    workdir: Path | None = None
    cluster: ClusterPlan | None = None
    """Half the run on PostgreSQL with two nodes (``switch.py``); None: the file store only."""


@dataclass
class YearResult:
    config: YearConfig
    campaign: CampaignResult
    schedules: list[ScheduleCheck]
    model_requests: int
    overflows: int
    model_faults: int
    summary_calls: int
    summary_tokens: int
    probes_asked: int
    probes_answered: int
    reset_probes_asked: int
    reset_probes_fresh: int
    """Probes asked right after a ``/reset`` that were not answered from before it."""
    commands: CommandCheck
    tool_calls: dict[str, int]
    """Tool calls the model asked for, by tool (bash, tool_output, memory)."""
    reads: tuple[int, int, int]
    """Cut outputs read back through ``tool_output``: asked, right, cut by a kill."""
    memory: NoteCounts
    """Notes remembered and recalled through the memory tool (``checks.py``)."""
    tool_problems: list[str]
    telegram_faults: int
    edits: int
    pastes: int
    too_big: int
    refused: int
    """Messages answered with an error the user saw (a paste no request can carry)."""
    cut_unasked: int
    """Tool calls a kill cut before their approval was asked; the reply says so."""
    unattributed: list[str]
    readyz_checks: int
    readyz_failures: list[str]
    gateway_states: dict[str, int]
    error_lines: int
    errors_without_session: list[str]
    samples: list[Sample]
    kill_sim_ms: list[int]
    latencies: list[tuple[int, float]]
    """(simulated ms when written, seconds until answered) per answered message."""
    model_calls: list[tuple[int, int, str]]
    wall_seconds: float
    sim_days: float
    serve_cpu: float = 0.0
    """CPU seconds of every serving process (the last reading of each, 0.5 s apart)."""
    driver_cpu: float = 0.0
    """CPU seconds of this process: the fake Telegram, the model server, the campaign."""
    disk_final: dict[str, int] = field(default_factory=dict)
    files_at_end: dict[str, int] = field(default_factory=dict)
    """The serving process's open files at the end, by kind (``open_files``)."""
    open_file_problems: list[str] = field(default_factory=list)
    ttl: TtlCheck | None = None
    """Sessions ended by the TTL sweep on the simulated calendar, and none other (``ttl.py``)."""
    problems: list[str] = field(default_factory=list)
    world_rows: list[tuple[str, str]] = field(default_factory=list)
    """What the run's ``World`` adds to the table (``World.judge``)."""
    world_problems: list[str] = field(default_factory=list)
    """What the run's ``World`` found wrong (each fails the run)."""
    marks: list[tuple[int, str]] = field(default_factory=list)
    """(simulated ms from the start, kind) of events the picture marks (a world's attempts)."""
    title: str = "a simulated year"
    switch: SwitchReport | None = None
    """How the switch to PostgreSQL went (a run with ``cluster``)."""
    node_kills: list[NodeKill] = field(default_factory=list)
    """The second half's kills: victim, the leases it led, how long it stayed down."""
    cluster: ClusterFacts | None = None
    """When the switch came, each node's replies and polls, the database's size."""

    @property
    def ok(self) -> bool:
        return (
            self.campaign.ok
            and self.overflows == 0
            and all(not s.problems for s in self.schedules)
            and self.probes_answered == self.probes_asked
            and self.reset_probes_fresh == self.reset_probes_asked
            and not self.commands.problems
            and not self.tool_problems
            and not self.open_file_problems
            and not self.readyz_failures
            and not self.errors_without_session
            and (self.ttl is None or not self.ttl.problems)
            and not self.world_problems
            and (self.switch is None or not self.switch.problems)
        )

    def quantiles(self) -> tuple[float, float]:
        values = sorted(seconds for _at, seconds in self.latencies)
        if len(values) < 2:
            return (values[0], values[0]) if values else (0.0, 0.0)
        cuts = statistics.quantiles(values, n=100)
        return cuts[49], cuts[98]


async def run_year(config: YearConfig, world: World | None = None) -> YearResult:
    """One simulated year (module docstring), or what ``world`` makes of the engine."""
    world = world or World()
    os.environ.setdefault("PTB_TIMEDELTA", "1")  # PTB's RetryAfter warns without it
    rng = random.Random(config.seed)
    root = config.workdir or Path(tempfile.mkdtemp(prefix="duragent-year-"))
    clock = ClockDriver(root / "clock.bin", START)
    end_ms = clock.ms + int(config.days * DAY_MS)
    model = world.model(clock)
    pg_view = None if config.cluster is None else PgView(config.cluster.dsn, config.cluster.schema)
    try:
        async with (
            world.around(root),
            FakeTelegram(token=TOKEN, keep_calls=50_000, clock=lambda: clock.ms / 1000) as tg,
            world.llm(model) as llm,
        ):
            tg.add_fault(*telegram_faults())
            schedules = timing(config.days, config.every_seconds, config.pulse_days)
            ttl_hours = ttl_hours_for(config.days)
            cfg = world.workspace(
                root,
                telegram_url=tg.url,
                llm_url=llm.openai_base_url,
                every_seconds=config.every_seconds,
                ttl_hours=ttl_hours,
                pulse=(schedules.pulse_month, config.pulse_days) if schedules.pulse else None,
            )
            command = [sys.executable, "-m", "bench.year.serve", str(cfg), str(clock.path)]
            serve = ServeNodes(cfg, command=command, pythonpath=[SOURCE])
            view: StoreView = FileView(root)  # the store read through (``store_view``)
            switch = None
            if config.cluster is not None and pg_view is not None:
                view = SwitchedView(view, pg_view)
                switch = StoreSwitch(config.cluster, serve, world.for_node, view)
            campaign = world.campaign(
                tg,
                serve,
                plan(config.chats, config.messages, rng, group_every=config.group_every),
                config.kills,
                rng,
                clock=clock,
                end_ms=end_ms,
                step_ms=min(config.every_seconds * 1000 // 4, DAY_MS // 8),
                prose=model.prose,
                max_hold_ms=ttl_hours * 3_600_000 // 2,
                view=view,
                switch=switch,
            )
            campaign.next_due = {name: schedules.next_due(name) for name in schedules.names}
            probe = Probe(campaign, serve, root / ".duragent")
            started = time.monotonic()
            cpu_before = _own_cpu()
            serve.start()
            sampling: asyncio.Task[None] | None = None
            files_at_end: dict[str, int] = {}
            ttl: TtlCheck | None = None
            try:
                await serve.wait_ready()
                sampling = asyncio.create_task(probe.run())
                await campaign.run()
                for _hour in range(OVERRUN_HOURS):  # until a sweep saw the last silences
                    await campaign.overrun(1, OVERRUN_HOLD)
                    ttl = await check_ttl(
                        serve.url, campaign.view, campaign.last_active, clock.ms, ttl_hours
                    )
                    if not ttl.problems:
                        break
                await settle(campaign.view, clock.ms, schedules)
                await asyncio.sleep(1.0)
                campaign.read_sends()
                if serve.pid is not None:
                    files_at_end = open_files(serve.pid, root / ".duragent")
                await world.after(campaign, serve)
            finally:
                if sampling is not None:
                    sampling.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await sampling
                serve.stop_all()
            wall = time.monotonic() - started
            driver_cpu = _own_cpu() - cpu_before
            cluster = None if switch is None else gather(campaign, tg, campaign.view)
            fired = sum(rule.fired for rule in tg.faults)
            if config.workdir is not None:  # what users saw, to read a failure
                dump_calls(root / "calls.jsonl", tg)
        result = _gather(config, root, campaign, probe, model, serve, clock, fired, wall)
        result.serve_cpu = sum(probe.cpu_by_pid.values())
        result.driver_cpu = driver_cpu
        result.files_at_end = files_at_end
        result.open_file_problems = open_file_problems(files_at_end, root / ".duragent")
        result.problems.extend(result.open_file_problems)
        result.ttl = ttl
        if ttl is not None:
            result.problems.extend(ttl.problems[:10])
        result.title = world.title
        if switch is not None:
            result.switch = switch.report
            result.cluster = cluster
            result.problems.extend(switch.report.problems)
        if campaign.second_half is not None:
            result.node_kills = campaign.second_half.kills
        world.judge(root, result, campaign)
        result.problems.extend(result.world_problems)
        return result
    finally:
        clock.close()
        if config.cluster is not None:
            drop_cluster(config.cluster, pg_view)
        if config.workdir is None:
            shutil.rmtree(root, ignore_errors=True)


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _gather(
    config: YearConfig,
    root: Path,
    campaign: YearCampaign,
    probe: Probe,
    model: YearModel,
    serve: ServeProcess,
    clock: ClockDriver,
    telegram_faults_fired: int,
    wall: float,
) -> YearResult:
    chat_ids = {c.chat_id for c in campaign.plan}
    sent = [s for s in campaign.sent if s.chat_id in chat_ids]
    result = verdict(campaign.plan, sent, serve, campaign.kill_times, wall)
    refused = set(campaign.refused) | set(campaign.cut_unasked)
    told = [p for p in result.problems if any(p.endswith(f"no answer to {t}") for t in refused)]
    result.missing -= len(told)  # answered with an error the user saw: counted apart
    result.problems = [p for p in result.problems if p not in told]
    dms = {c.chat_id for c in campaign.plan if not c.group}
    commands = check_commands(campaign.commands, campaign.serve)
    placed = {
        id(s) for cs in campaign.commands.values() for c in cs for s in [c.reply, *c.copies] if s
    }
    unattributed = [
        s.text[:120]
        for s in sent
        if s.chat_id in dms
        and not s.prompt
        and not answer_tokens(s.text)
        and INTERRUPTED not in s.text
        and not s.text.startswith(REFUSED)
        and id(s) not in placed
    ]
    schedules = timing(config.days, config.every_seconds, config.pulse_days)
    kills = len(campaign.kill_times)
    checks = []
    for name, (dues, zone) in expected(campaign.view, clock.ms, schedules).items():
        chat = schedules.chat(name)
        sends = sum(1 for s in campaign.sent if s.chat_id == chat and not s.prompt)
        checks.append(check_schedule(name, runs(campaign.view, name), dues, sends, kills, zone))
    error_lines, silent = log_errors(root)
    latencies = [
        (campaign.pushed_sim.get(m.token, 0), m.answered_at - m.pushed_at)
        for c in campaign.plan
        for m in c.messages
        if m.answered_at is not None and m.pushed_at is not None
    ]
    asked = [t for t in campaign.probed if t in model.probes and t not in campaign.reset_probes]
    after_reset = [t for t in campaign.reset_probes if t in model.probes]
    tool_problems, reads, memory = tool_checks(root, model)
    problems = list(result.problems)
    problems.extend(commands.problems)
    problems.extend(tool_problems)
    problems.extend(
        f"probe {t}: answered from before the /reset" for t in after_reset if model.probes[t]
    )
    for check in checks:
        problems.extend(check.problems)
    problems.extend(
        f"probe {t}: the secret was not in the request" for t in asked if not model.probes[t]
    )
    problems.extend(
        f"probe {t}: never asked of the model" for t in campaign.probed if t not in model.probes
    )
    problems.extend(probe.readyz_failures[:10])
    problems.extend(f"log: {line[:200]}" for line in silent[:10])
    limited = sorted(
        {
            s.chat_id
            for s in sent
            if RATE_FIELD in s.text and s.chat_id not in campaign.rate_limited_ok
        }
    )
    if limited:  # each chat's person writes at a person's pace: never a flood
        problems.append(f"{len(limited)} chat(s) told they wrote too fast: {limited[:10]}")
    if model.overflows:
        problems.append(f"{model.overflows} request(s) over the model's window")
    duragent = root / ".duragent"
    disk = {
        "sessions": disk_bytes(duragent / "sessions"),
        "schedules": disk_bytes(duragent / "schedules"),
        "total": disk_bytes(duragent),
    }
    return YearResult(
        config=config,
        campaign=result,
        schedules=checks,
        model_requests=model.requests,
        overflows=model.overflows,
        model_faults=model.faults,
        summary_calls=model.summary_calls,
        summary_tokens=model.summary_tokens,
        probes_asked=len(campaign.probed) - len(campaign.reset_probes),
        probes_answered=sum(1 for t in asked if model.probes[t]),
        reset_probes_asked=len(campaign.reset_probes),
        reset_probes_fresh=sum(1 for t in after_reset if not model.probes[t]),
        commands=commands,
        tool_calls=dict(model.tool_calls),
        reads=reads,
        memory=memory,
        tool_problems=tool_problems,
        telegram_faults=telegram_faults_fired,
        edits=campaign.edits,
        pastes=campaign.pastes,
        too_big=campaign.too_big,
        refused=len(campaign.refused),
        cut_unasked=len(campaign.cut_unasked),
        unattributed=unattributed,
        readyz_checks=probe.readyz_checks,
        readyz_failures=probe.readyz_failures,
        gateway_states=probe.states,
        error_lines=error_lines,
        errors_without_session=silent,
        samples=probe.samples,
        kill_sim_ms=[ms - campaign.start_ms for ms in campaign.kill_sim_ms],
        latencies=[(at - campaign.start_ms, s) for at, s in latencies],
        model_calls=[(at - campaign.start_ms, n, kind) for at, n, kind in model.calls],
        wall_seconds=wall,
        sim_days=(clock.ms - campaign.start_ms) / DAY_MS,
        disk_final=disk,
        problems=problems,
    )
