"""The daily-report example workspace loads and declares its weekday schedule."""

from __future__ import annotations

from pathlib import Path

from duragent.agents import load_catalog
from duragent.config import load_workspace
from duragent.scheduler import Cron, ManualClock, Schedules, TaskPayload, declared_id
from tests.scheduler.rig import START, RecordingPayloads

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "daily-report" / "duragent.yaml"


def test_the_daily_report_example_declares_a_weekday_task(tmp_path: Path) -> None:
    ws = load_workspace(EXAMPLE)
    assert ws.warnings == ()
    catalog = load_catalog(ws.paths.agents)
    assert catalog.broken == {}
    schedules = Schedules(
        tmp_path, agents=lambda: catalog, payloads=RecordingPayloads(), clock=ManualClock(START)
    )
    (report,) = schedules.load()
    assert schedules.problems == []
    assert report.id == declared_id("reporter", "weekday-report")
    assert report.timing == Cron("0 9 * * MON-FRI", "Europe/Berlin")
    assert isinstance(report.payload, TaskPayload)
