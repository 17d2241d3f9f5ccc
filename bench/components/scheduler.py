"""Scheduler benchmark: fire lag at the run cap, a same-second burst, and a simulated year.

1. **spread**: 1,000 one-shot ``task`` schedules due within one minute (evenly spread), run
   by a real in-process ``Runtime`` (offline "instant" model, each task in a session of its
   own, run logs fsync'd) at the default cap of 5 runs at once: fire lag (the ``running``
   line's time minus the due time) p50/p99/max, runs/s, peak RSS.
2. **burst**: the same 1,000 due in the same second: the time until the last one ended.
3. **year**: ``Scheduler`` on a hand-moved clock, 365 daily cron jobs (different times of day,
   half in America/New_York, half in Europe/Berlin) over 2026: runs, doubles, missed, wall
   time. Expected due times are counted independently with ``zoneinfo`` (one per local day).

    .venv/bin/python -m bench.components.scheduler                 # all three
    .venv/bin/python -m bench.components.scheduler --only year --jobs 365
    .venv/bin/python -m bench.components.scheduler --kills 25      # the long SIGKILL campaign too

The scheduler's rig and its SIGKILL campaign are the suite's (``tests/scheduler/rig.py``,
``tests/scheduler/kill_campaign.py``): run it from the project root, where ``tests`` imports.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import resource
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.rigs.table import pct
from duragent.config import load_workspace
from duragent.runtime import Runtime
from duragent.scheduler import At, Cron, ManualClock, TaskPayload
from tests.scheduler.rig import RecordingPayloads, make_scheduler, run_until, schedule

SCRATCH = "/dev/shm" if Path("/dev/shm").is_dir() else None
"""The simulated year's run logs are not fsync'd: it measures the loop, not the disk."""

AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: worker
spec:
  model:
    provider: offline
    name: duragent-offline
"""


def peak_rss_mb() -> float:
    """This process's peak resident memory, MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def fire(root: Path, count: int, spread: float) -> dict[str, float]:
    (root / "duragent.yaml").write_text("server:\n  host: 127.0.0.1\n")
    agent = root / ".duragent" / "agents" / "worker"
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "agent.yaml").write_text(AGENT)
    runtime = Runtime(load_workspace(root), port=0)
    await runtime.start()
    try:
        schedules = runtime.schedules
        assert schedules is not None
        # far enough ahead that creating them all (an fsync'd file each) ends before the first
        # is due, even on a busy machine: a one-shot in the past is refused
        start = datetime.now(UTC) + timedelta(seconds=3 + count * 0.01)
        made = []
        for i in range(count):
            due = start + timedelta(seconds=spread * i / count)
            job = TaskPayload(f"job {i}")
            made.append(schedules.add(schedules.new(agent="worker", timing=At(due), payload=job)))
        deadline = time.monotonic() + spread + 600
        while time.monotonic() < deadline:
            if all(schedules.get(s.id).status == "completed" for s in made):
                break
            await asyncio.sleep(0.2)
    finally:
        await runtime.aclose()
    lags: list[float] = []
    ends: list[float] = []
    outcomes: Counter[str] = Counter()
    for s in made:
        for line in schedules.runs.recent(s.id, 100):
            if line["status"] == "running":
                lags.append((line["ts"] - line["due"]) / 1000)
            elif line["status"] in ("ok", "error", "interrupted", "missed"):
                outcomes[line["status"]] += 1
                ends.append(line["ts"] / 1000)
    first_due = start.timestamp()
    return {
        "runs": len(lags),
        "ok": outcomes["ok"],
        "lag_p50": pct(lags, 0.5),
        "lag_p99": pct(lags, 0.99),
        "lag_max": max(lags),
        "drain_s": max(ends) - first_due - spread * (count - 1) / count,
        "runs_per_s": len(lags) / (max(ends) - first_due),
        "rss_mb": peak_rss_mb(),
    }


async def year(jobs: int) -> dict[str, float]:
    from zoneinfo import ZoneInfo

    zones = ("America/New_York", "Europe/Berlin")
    start, end = datetime(2026, 1, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC)
    clock, payloads = ManualClock(start), RecordingPayloads()
    with tempfile.TemporaryDirectory(dir=SCRATCH) as d:
        scheduler = make_scheduler(Path(d), clock, payloads)
        expected = 0
        for i in range(jobs):
            zone = zones[i % 2]
            minute, hour = (i * 7) % 60, (i * 5) % 24
            scheduler.put(schedule(f"job{i}", Cron(f"{minute} {hour} * * *", zone)))
            tz = ZoneInfo(zone)
            day = datetime(2025, 12, 31)
            while day < datetime(2027, 1, 2):  # local days whose run falls inside the UTC year
                local = datetime(day.year, day.month, day.day, hour, minute, tzinfo=tz)
                expected += start <= local.astimezone(UTC) < end
                day += timedelta(days=1)
        began = time.perf_counter()
        await run_until(scheduler, clock, end - timedelta(microseconds=1))
        wall = time.perf_counter() - began
    runs = Counter(payloads.runs)
    return {
        "jobs": jobs,
        "runs": len(payloads.runs),
        "expected": expected,
        "double": sum(1 for n in runs.values() if n > 1),
        "missed": max(0, expected - len(runs)),
        "wall_s": wall,
        "runs_per_s": len(payloads.runs) / wall,
    }


async def kills(count: int, seed: int) -> dict[str, object]:
    from tests.scheduler.kill_campaign import run_kill_campaign

    with tempfile.TemporaryDirectory() as d:
        result = await run_kill_campaign(Path(d), kills=count, seed=seed)
    return {"kills": result.kills, "due_times": result.due_times,
            "outcomes": dict(result.outcomes), "recorded": result.recorded,
            "delivered": result.delivered, "resent": result.resent,
            "problems": result.problems}  # fmt: skip


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", choices=["spread", "burst", "year"], default=None)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--spread", type=float, default=60.0)
    parser.add_argument("--jobs", type=int, default=365)
    parser.add_argument("--kills", type=int, default=0, help="also run the SIGKILL campaign")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    results: dict[str, object] = {}
    if args.only in (None, "spread"):
        with tempfile.TemporaryDirectory() as d:
            results["spread"] = await fire(Path(d), args.count, args.spread)
    if args.only in (None, "burst"):
        with tempfile.TemporaryDirectory() as d:
            results["burst"] = await fire(Path(d), args.count, 0.0)
    if args.only in (None, "year"):
        results["year"] = await year(args.jobs)
    if args.kills:
        results["kills"] = await kills(args.kills, args.seed)
    print(json.dumps(results, indent=2, default=str))
    year_result = results.get("year")
    bad = isinstance(year_result, dict) and (year_result["double"] or year_result["missed"])
    kill_result = results.get("kills")
    return 1 if bad or (isinstance(kill_result, dict) and kill_result["problems"]) else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
