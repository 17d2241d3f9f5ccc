"""Run-log lines written from threads stay in the order the scheduler decided them."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

import pytest

from duragent.scheduler.run_writes import RunLogWriter
from duragent.store.schedule_files import RunLogFiles


class SlowRunLog:
    """A run log whose first appends take longest (a database answering late), one failing."""

    def __init__(self, fail_status: str | None = None) -> None:
        self.lines: list[dict[str, Any]] = []
        self.threads: set[str] = set()
        self._fail_status = fail_status
        self._delays = iter([0.05, 0.03, 0.01])

    def append(self, schedule_id: str, run: dict[str, Any]) -> None:
        self.threads.add(threading.current_thread().name)
        time.sleep(next(self._delays, 0.0))
        if run["status"] == self._fail_status:
            raise OSError("the database is away")
        self.lines.append(run)

    def recent(self, schedule_id: str, limit: int) -> list[dict[str, Any]]:
        return self.lines[-limit:]

    def logged(self) -> list[str]:
        return ["s"] if self.lines else []


async def test_lines_written_behind_and_awaited_land_in_the_order_they_were_decided() -> None:
    runs = SlowRunLog()
    writer = RunLogWriter(runs, off_loop=True)
    writer.write_behind("s", {"status": "missed"})
    writer.write_behind("s", {"status": "registered"})
    await writer.write("s", {"status": "running"})
    assert [line["status"] for line in runs.lines] == ["missed", "registered", "running"]
    assert threading.main_thread().name not in runs.threads


async def test_a_line_that_could_not_be_written_behind_is_logged_and_the_next_still_lands(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runs = SlowRunLog(fail_status="missed")
    writer = RunLogWriter(runs, off_loop=True)
    with caplog.at_level(logging.ERROR):
        writer.write_behind("sched_daily", {"status": "missed"})
        await writer.write("sched_daily", {"status": "running"})
        await asyncio.sleep(0)  # the failed line's callback
    assert [line["status"] for line in runs.lines] == ["running"]
    assert "sched_daily: run-log line missed not written" in caplog.text


async def test_an_awaited_line_that_could_not_be_written_raises_to_its_run() -> None:
    writer = RunLogWriter(SlowRunLog(fail_status="running"), off_loop=True)
    with pytest.raises(OSError, match="away"):
        await writer.write("s", {"status": "running"})


async def test_with_files_a_line_is_written_where_it_is_decided(tmp_path: Any) -> None:
    runs = RunLogFiles(tmp_path / "runs")
    writer = RunLogWriter(runs, off_loop=False)
    writer.write_behind("s", {"status": "missed"})
    assert [line["status"] for line in runs.recent("s", 10)] == ["missed"]  # already there


class StuckRunLog(SlowRunLog):
    """A database that stopped answering: every append hangs until ``release``."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def append(self, schedule_id: str, run: dict[str, Any]) -> None:
        self.release.wait(30)


async def test_a_cancelled_write_waits_for_a_database_that_stopped_answering_a_while_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stop cancels the runs; a run whose line cannot land (the database went away under
    it) lets the cancellation through after a while instead of holding the stop for ever."""
    monkeypatch.setattr("duragent.scheduler.run_writes.CANCELLED_WAIT_SECONDS", 0.2, raising=False)
    runs = StuckRunLog()
    writer = RunLogWriter(runs, off_loop=True)
    for n in range(3):  # lines queued behind the one that hangs
        writer.write_behind("s", {"status": f"missed {n}"})
    run = asyncio.create_task(writer.write("s", {"status": "running"}))
    await asyncio.sleep(0.05)
    run.cancel()
    started = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        await run
    waited = time.monotonic() - started
    runs.release.set()
    assert waited < 10  # not the hung database's 30 s
