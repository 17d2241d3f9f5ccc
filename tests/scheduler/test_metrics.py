"""The scheduler's metrics: runs by status (each missed due time counted) and the fire lag."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from duragent.observability.metrics import Metrics
from duragent.scheduler.clock import ManualClock
from duragent.scheduler.model import Every
from tests.scheduler.rig import START, RecordingPayloads, make_scheduler, schedule


def _values(metrics: Metrics) -> dict[tuple[str, str], float]:
    text = metrics.exposition().decode()
    return {
        (s.name, s.labels.get("status", "")): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith("duragent_scheduler_")
    }


async def test_a_late_run_counts_its_missed_due_times_and_its_lag(tmp_path: Path) -> None:
    clock, payloads = ManualClock(START), RecordingPayloads()
    scheduler = make_scheduler(tmp_path, clock, payloads)
    scheduler.metrics = metrics = Metrics()
    scheduler.put(schedule("minutely", Every(60)))
    clock.set(START + timedelta(minutes=10, seconds=30))  # ten due times passed
    scheduler.tick()
    await scheduler.drain()
    found = _values(metrics)
    assert found[("duragent_scheduler_runs_total", "ok")] == 1
    assert found[("duragent_scheduler_runs_total", "missed")] == 9
    assert found[("duragent_scheduler_fire_lag_seconds_count", "")] == 1
    assert found[("duragent_scheduler_fire_lag_seconds_sum", "")] == 30.0
