"""The loop: each due time at most once, coalesced catch-up, grace for missed runs, retries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from duragent.scheduler.clock import ManualClock
from duragent.scheduler.model import At, Cron, Every, Retry, Schedule
from duragent.scheduler.service import SchedulerSettings, backoff_seconds
from duragent.scheduler.timing import next_due
from duragent.store.schedule_files import RunLogFiles
from tests.scheduler.rig import START, RecordingPayloads, make_scheduler, run_until, schedule

DAY = timedelta(days=1)


def outcomes(tmp_path: Path, sched_id: str) -> list[tuple[str, datetime]]:
    from duragent.scheduler.runs import OUTCOMES, from_ms

    lines = RunLogFiles(tmp_path / "runs").recent(sched_id, 10_000)
    return [(e["status"], from_ms(e["due"])) for e in lines if e["status"] in OUTCOMES]


async def test_a_daily_schedule_runs_on_each_due_time_once(tmp_path: Path) -> None:
    clock, payloads = ManualClock(START), RecordingPayloads()
    scheduler = make_scheduler(tmp_path, clock, payloads)
    scheduler.put(schedule("daily"))
    await run_until(scheduler, clock, START + 3 * DAY)
    nine = START.replace(hour=9)
    assert payloads.runs == [("daily", nine), ("daily", nine + DAY), ("daily", nine + 2 * DAY)]
    assert [s for s, _ in outcomes(tmp_path, "daily")] == ["ok", "ok", "ok"]


async def test_a_restart_never_runs_a_due_time_again(tmp_path: Path) -> None:
    clock, payloads = ManualClock(START), RecordingPayloads()
    first = make_scheduler(tmp_path, clock, payloads)
    first.put(schedule("daily"))
    await run_until(first, clock, START + DAY)
    second = make_scheduler(tmp_path, clock, payloads)  # same run log, same instant
    second.put(schedule("daily"))
    second.tick()
    await second.drain()
    assert len(payloads.runs) == 1
    await run_until(second, clock, START + 2 * DAY)
    assert payloads.doubles() == []
    assert len(payloads.runs) == 2


async def test_due_times_missed_while_down_are_coalesced_into_one_late_run(
    tmp_path: Path,
) -> None:
    clock, payloads = ManualClock(START), RecordingPayloads()
    scheduler = make_scheduler(tmp_path, clock, payloads)
    scheduler.put(schedule("minutely", Every(60)))
    clock.set(START + timedelta(minutes=10, seconds=30))  # ten due times passed
    scheduler.tick()
    await scheduler.drain()
    assert payloads.runs == [("minutely", START + timedelta(minutes=10))]
    (missed,) = RunLogFiles(tmp_path / "runs").recent("minutely", 100)[:1]
    assert missed["status"] == "missed"
    assert missed["count"] == 9


async def test_a_recurring_due_time_older_than_its_grace_is_recorded_missed_not_run(
    tmp_path: Path,
) -> None:
    clock, payloads = ManualClock(START), RecordingPayloads()
    scheduler = make_scheduler(tmp_path, clock, payloads)
    scheduler.put(schedule("daily"))
    clock.set(START.replace(hour=10))  # an hour late; grace is a minute
    scheduler.tick()
    await scheduler.drain()
    assert payloads.runs == []
    assert outcomes(tmp_path, "daily") == [("missed", START.replace(hour=9))]
    assert scheduler.next_wake() == START.replace(hour=9) + DAY


async def test_a_one_shot_missed_while_down_runs_once_on_start(tmp_path: Path) -> None:
    clock, payloads = ManualClock(START + timedelta(hours=5)), RecordingPayloads()
    scheduler = make_scheduler(tmp_path, clock, payloads)
    completed: list[Schedule] = []
    scheduler.on_status = completed.append
    scheduler.put(schedule("remind", At(START + timedelta(hours=1))))
    scheduler.tick()
    await scheduler.drain()
    scheduler.tick()
    await scheduler.drain()
    assert payloads.runs == [("remind", START + timedelta(hours=1))]
    assert [s.status for s in completed] == ["completed"]


async def test_a_one_shot_older_than_its_grace_is_recorded_missed(tmp_path: Path) -> None:
    clock, payloads = ManualClock(START + timedelta(days=3)), RecordingPayloads()
    scheduler = make_scheduler(tmp_path, clock, payloads)
    scheduler.put(schedule("remind", At(START + timedelta(hours=1))))
    scheduler.tick()
    await scheduler.drain()
    assert payloads.runs == []
    assert [s for s, _ in outcomes(tmp_path, "remind")] == ["missed"]
    assert scheduler.get("remind").status == "completed"  # type: ignore[union-attr]


async def test_a_recurring_schedule_keeps_running_after_a_failed_run(tmp_path: Path) -> None:
    clock, payloads = ManualClock(START), RecordingPayloads(failures_left=1)
    scheduler = make_scheduler(tmp_path, clock, payloads)
    scheduler.put(schedule("daily"))
    await run_until(scheduler, clock, START + 2 * DAY)
    assert [s for s, _ in outcomes(tmp_path, "daily")] == ["error", "ok"]
    assert scheduler.state("daily").last_status == "ok"


async def test_a_failed_attempt_is_retried_and_the_run_records_one_outcome(
    tmp_path: Path,
) -> None:
    clock, payloads = ManualClock(START), RecordingPayloads(failures_left=2)
    scheduler = make_scheduler(tmp_path, clock, payloads)
    scheduler.put(schedule("daily", retry=Retry(3, 1000, 30000)))
    await run_until(scheduler, clock, START + DAY)
    assert len(payloads.runs) == 3
    assert outcomes(tmp_path, "daily") == [("ok", START.replace(hour=9))]


async def test_retries_running_out_end_in_an_error_naming_the_attempts(tmp_path: Path) -> None:
    clock, payloads = ManualClock(START), RecordingPayloads(failures_left=5)
    scheduler = make_scheduler(tmp_path, clock, payloads)
    scheduler.put(schedule("daily", retry=Retry(1, 1000, 30000)))
    await run_until(scheduler, clock, START + DAY)
    state = scheduler.state("daily")
    assert state.last_status == "error"
    assert state.last_error == "the chat was unreachable (after 2 attempts)"


def test_backoff_doubles_is_capped_and_jittered_by_a_fifth() -> None:
    import random

    rng = random.Random(7)
    delays = [backoff_seconds(k, 1000, 5000, rng) for k in (1, 2, 3, 4, 5)]
    for got, base in zip(delays, (1, 2, 4, 5, 5), strict=True):
        assert 0.8 * base <= got <= 1.2 * base


async def test_a_run_killed_before_it_wrote_anything_runs_once_more_without_a_retry_block(
    tmp_path: Path,
) -> None:
    """A kill is not the run's failure: its due time is not missed (found by bench/year)."""
    nine = START.replace(hour=9)
    runs = RunLogFiles(tmp_path / "runs")
    runs.append("daily", {"ts": 0, "status": "running", "due": int(nine.timestamp() * 1000)})
    clock, payloads = ManualClock(nine + timedelta(seconds=5)), RecordingPayloads()
    scheduler = make_scheduler(tmp_path, clock, payloads)
    scheduler.put(schedule("daily"))
    await run_until(scheduler, clock, nine + timedelta(hours=1))
    assert payloads.runs == [("daily", nine)]
    assert outcomes(tmp_path, "daily") == [("ok", nine)]


async def test_a_run_killed_twice_is_recorded_interrupted_at_start(tmp_path: Path) -> None:
    nine = START.replace(hour=9)
    due = int(nine.timestamp() * 1000)
    runs = RunLogFiles(tmp_path / "runs")
    runs.append("daily", {"ts": 0, "status": "running", "due": due, "attempt": 1})
    runs.append("daily", {"ts": 0, "status": "retry", "due": due, "attempt": 1})
    runs.append("daily", {"ts": 0, "status": "running", "due": due, "attempt": 2})
    clock, payloads = ManualClock(nine + timedelta(seconds=5)), RecordingPayloads()
    scheduler = make_scheduler(tmp_path, clock, payloads)
    scheduler.put(schedule("daily"))
    await run_until(scheduler, clock, nine + timedelta(hours=1))
    assert payloads.runs == []
    assert outcomes(tmp_path, "daily") == [("interrupted", nine)]


async def test_an_interrupted_run_with_retries_left_runs_again_for_its_due_time(
    tmp_path: Path,
) -> None:
    nine = START.replace(hour=9)
    runs = RunLogFiles(tmp_path / "runs")
    runs.append("daily", {"ts": 0, "status": "running", "due": int(nine.timestamp() * 1000)})
    clock, payloads = ManualClock(nine + timedelta(seconds=5)), RecordingPayloads()
    scheduler = make_scheduler(tmp_path, clock, payloads)
    scheduler.put(schedule("daily", retry=Retry()))
    scheduler.tick()
    await scheduler.drain()
    assert payloads.runs == [("daily", nine)]
    assert outcomes(tmp_path, "daily") == [("ok", nine)]


async def test_an_interrupted_run_that_wrote_into_a_session_is_not_run_again(
    tmp_path: Path,
) -> None:
    nine = int(START.replace(hour=9).timestamp() * 1000)
    runs = RunLogFiles(tmp_path / "runs")
    runs.append("daily", {"ts": 0, "status": "running", "due": nine})
    runs.append("daily", {"ts": 0, "status": "recorded", "due": nine, "session_id": "s", "seq": 3})
    clock, payloads = ManualClock(START.replace(hour=9, second=5)), RecordingPayloads()
    scheduler = make_scheduler(tmp_path, clock, payloads)
    scheduler.put(schedule("daily", retry=Retry()))
    scheduler.tick()
    await scheduler.drain()
    assert payloads.runs == []
    assert [s for s, _ in outcomes(tmp_path, "daily")] == ["interrupted"]


async def test_at_most_the_configured_number_of_runs_are_in_progress_at_once(
    tmp_path: Path,
) -> None:
    import asyncio

    class Slow(RecordingPayloads):
        running = 0
        peak = 0

        async def run(self, schedule, due, record, attempt=1):
            Slow.running += 1
            Slow.peak = max(Slow.peak, Slow.running)
            await asyncio.sleep(0.001)
            Slow.running -= 1
            return await super().run(schedule, due, record, attempt)

    clock, payloads = ManualClock(START), Slow()
    scheduler = make_scheduler(tmp_path, clock, payloads, SchedulerSettings(max_concurrent_runs=3))
    for i in range(12):
        scheduler.put(schedule(f"s{i}"))
    await run_until(scheduler, clock, START + DAY)
    assert len(payloads.runs) == 12
    assert Slow.peak == 3


async def test_a_cancelled_schedule_does_not_run(tmp_path: Path) -> None:
    clock, payloads = ManualClock(START), RecordingPayloads()
    scheduler = make_scheduler(tmp_path, clock, payloads)
    scheduler.put(schedule("daily"))
    scheduler.put(schedule("daily", status="cancelled"))
    await run_until(scheduler, clock, START + 2 * DAY)
    assert payloads.runs == []
    assert scheduler.next_wake() is None


async def test_a_simulated_year_of_daily_jobs_in_two_zones_runs_each_due_time_exactly_once(
    tmp_path: Path,
) -> None:
    from zoneinfo import ZoneInfo

    zones = ("America/New_York", "Europe/Berlin")
    times = ("0 0", "30 1", "30 2", "0 9")  # midnight, in and beside the DST-changing hours
    clock, payloads = ManualClock(START), RecordingPayloads()
    scheduler = make_scheduler(tmp_path, clock, payloads)
    for zone in zones:
        for t in times:
            scheduler.put(
                schedule(f"{zone.split('/')[1]}-{t.replace(' ', '')}", Cron(f"{t} * * *", zone))
            )
    end = datetime(2027, 1, 1, tzinfo=UTC)
    await run_until(scheduler, clock, end)
    assert payloads.doubles() == []
    for zone in zones:
        tz = ZoneInfo(zone)
        for t in times:
            sid = f"{zone.split('/')[1]}-{t.replace(' ', '')}"
            got = sorted(d for s, d in payloads.runs if s == sid)
            days = {d.astimezone(tz).date() for d in got}
            assert len(got) == 365, sid  # one run on each local day of 2026, none missed
            assert len(days) == 365, sid
            minute, hour = t.split()
            on_time = [
                d
                for d in got
                if d.astimezone(tz).strftime("%H:%M") == f"{int(hour):02d}:{int(minute):02d}"
            ]
            assert len(got) - len(on_time) == (1 if hour == "2" else 0), sid  # the spring gap


async def test_a_schedule_whose_due_time_cannot_be_computed_is_set_aside_and_the_rest_run(
    tmp_path: Path,
) -> None:
    clock, payloads = ManualClock(START), RecordingPayloads()
    scheduler = make_scheduler(tmp_path, clock, payloads)
    # never validated (parse_schedule and check_timing refuse it): its zone does not exist
    await scheduler.start([schedule("mars", Cron("0 9 * * *", "Mars/Olympus")), schedule("daily")])
    try:
        assert "ZoneInfoNotFoundError" in scheduler.faults()["mars"]
        assert list(scheduler.faults()) == ["mars"]
        await run_until(scheduler, clock, START + DAY)
        assert payloads.runs == [("daily", START.replace(hour=9))]
        assert scheduler.loop is not None
        assert not scheduler.loop.done()
    finally:
        await scheduler.stop()


def test_due_times_past_the_documented_range_are_none_never_an_overflow() -> None:
    from duragent.scheduler.bounds import LATEST

    assert next_due(Every(10**20), START, START) is None
    assert next_due(Every(10**12), START, START) is None
    assert next_due(Every(60, LATEST - timedelta(seconds=30)), LATEST, START) is None
    assert next_due(At(datetime(9999, 12, 31, tzinfo=UTC)), START, START) is None
    assert next_due(Cron("0 0 0 31 12 * 9999", "America/New_York"), START, START) is None
