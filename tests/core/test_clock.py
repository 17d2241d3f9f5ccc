"""The process's calendar: one "now" for every stamp and every comparison with a stamp."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from duragent.core import clock
from duragent.core.events import Event, now_rfc3339

MOMENT = datetime(2026, 3, 8, 7, 30, 15, tzinfo=UTC)


@pytest.fixture
def simulated() -> Iterator[None]:
    clock.use_time_source(lambda: MOMENT.timestamp())
    try:
        yield
    finally:
        clock.use_time_source(time.time)


def test_the_calendar_is_the_wall_clock_unless_a_process_installs_another() -> None:
    before = time.time()
    assert before <= clock.now_seconds() <= time.time()
    assert clock.utc_now().tzinfo is UTC


def test_an_installed_source_stamps_events_and_answers_every_now(simulated: None) -> None:
    assert clock.utc_now() == MOMENT
    assert clock.local_now() == datetime.fromtimestamp(MOMENT.timestamp())
    assert now_rfc3339() == "2026-03-08T07:30:15.000Z"
    assert Event.user_message(1, content="hello").timestamp == "2026-03-08T07:30:15.000Z"
