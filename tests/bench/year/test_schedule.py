"""The year's own expectation of a daily schedule's due times, across the DST changes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bench.year.schedule import expected_cron


@pytest.mark.parametrize(
    ("zone", "local_day", "utc"),
    [
        ("America/New_York", "2026-03-07", "2026-03-07T07:30"),  # EST
        ("America/New_York", "2026-03-08", "2026-03-08T07:30"),  # 02:30 skipped: 03:30 EDT
        ("America/New_York", "2026-03-09", "2026-03-09T06:30"),  # EDT
        ("Europe/Berlin", "2026-03-29", "2026-03-29T01:30"),  # 02:30 skipped: 03:30 CEST
        ("Europe/Berlin", "2026-10-25", "2026-10-25T00:30"),  # 02:30 twice: the first (CEST)
        ("Europe/Berlin", "2026-10-26", "2026-10-26T01:30"),  # CET
    ],
)
def test_the_expected_daily_due_time_follows_the_spring_gap_and_the_first_autumn_pass(
    zone: str, local_day: str, utc: str
) -> None:
    day = datetime.fromisoformat(local_day).replace(tzinfo=UTC)
    after = int((day - timedelta(hours=12)).timestamp() * 1000)
    until = int((day + timedelta(hours=20)).timestamp() * 1000)
    dues = expected_cron(zone, 2, 30, after, until)
    expected = int(datetime.fromisoformat(utc).replace(tzinfo=UTC).timestamp() * 1000)
    assert expected in dues
