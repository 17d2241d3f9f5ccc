"""``bench/year.py``, short: a simulated week against real components, and its expectations.

The long run (a year, up to 100,000 messages, 50 SIGKILLs) is ``bench/year.py``; this one
runs the same engine (``bench/year_run.py``) for a week of 240 messages over 16 chats with two
kills of ``duragent serve``, about half a minute here, and checks the verdict the benchmark
prints, including the TTL sweep on the simulated calendar (a chat that falls silent after the
first 30 % has its session ended; every other chat keeps one). A failure's ``problems``
name the chat, message or due time; the workspace, every serving process's log and the run
logs stay in ``tmp_path``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def bench(name: str) -> Any:
    """A module of ``bench/`` (its scripts import each other by bare name)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module(name)


async def test_a_simulated_week_loses_nothing_repeats_nothing_and_never_overflows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "1")
    run = bench("year_run")
    config = run.YearConfig(
        days=7, messages=240, chats=16, kills=2, seed=23, workdir=tmp_path, pulse_days=2
    )
    result = await run.run_year(config)
    assert result.problems == []
    assert result.ok
    campaign = result.campaign
    assert campaign.kills == 2
    assert campaign.missing == 0
    assert campaign.sent_twice_real == 0
    assert campaign.answered_once + campaign.sent_twice_after_kill_answers == campaign.messages
    assert result.overflows == 0
    assert result.model_requests > campaign.messages
    assert result.summary_calls > 0
    assert result.probes_asked > 0
    assert result.probes_answered == result.probes_asked
    assert result.reset_probes_asked > 0
    assert result.reset_probes_fresh == result.reset_probes_asked
    commands = result.commands
    assert commands.problems == []
    assert commands.status_asked == commands.status_right > 0
    assert commands.reset_asked == commands.reset_right == commands.fresh_sessions > 0
    asked, right, _cut = result.reads
    assert asked > 0
    assert right > 0
    notes = result.memory
    assert 0 < notes.once <= notes.remembered
    assert notes.found > 0
    assert notes.found + notes.recalls_cut + notes.never_stored + notes.too_old == notes.recalls
    assert result.tool_problems == []
    for schedule in result.schedules:
        assert schedule.expected > 0
        assert schedule.ran_once == schedule.expected, schedule.problems
        assert schedule.missed == schedule.started_twice == 0
    ttl = result.ttl  # idleness on the simulated calendar: the silent chat's session ended
    assert ttl is not None
    assert ttl.problems == []
    assert ttl.ended == ttl.lapsed > 0
    assert ttl.kept == ttl.talking > 0
    assert result.readyz_checks > 0
    assert result.readyz_failures == []
    assert result.samples


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
    from datetime import UTC, datetime, timedelta

    schedule = bench("year_schedule")
    day = datetime.fromisoformat(local_day).replace(tzinfo=UTC)
    after = int((day - timedelta(hours=12)).timestamp() * 1000)
    until = int((day + timedelta(hours=20)).timestamp() * 1000)
    dues = schedule.expected_cron(zone, 2, 30, after, until)
    expected = int(datetime.fromisoformat(utc).replace(tzinfo=UTC).timestamp() * 1000)
    assert expected in dues


def test_the_commands_verdict_fails_a_reset_that_kept_the_session_and_an_unexplained_copy(
    tmp_path: Path,
) -> None:
    commands = bench("year_commands")
    from tests.gateways.campaign_verdict import Sent
    from tests.gateways.serve_process import ServeProcess

    serve = ServeProcess(tmp_path / "duragent.yaml")
    serve.killed = [True, False]  # the first process was killed, the second was not
    old = "Session: session_" + "A" * 26 + "\nAgent: small\nStatus: Active\nCreated: x"

    def chat(after_reset: str, reset_reply: str, copy_lifetime: int) -> Any:
        status = commands.ChatCommand(1001, 2, "status", pushed_at=1.0)
        status.reply = Sent(1001, old, 1.0, 0, False)
        status.copies = [Sent(1001, old, 2.0, copy_lifetime, False)]
        reset = commands.ChatCommand(1001, 9, "reset", pushed_at=3.0)
        reset.reply = Sent(1001, reset_reply, 3.0, 1, False)
        again = commands.ChatCommand(1001, 10, "status", after_reset=True, pushed_at=4.0)
        again.reply = Sent(1001, after_reset, 4.0, 1, False)
        return commands.check_commands({1001: [status, reset, again]}, serve)

    new = old.replace("A" * 26, "B" * 26)
    good = chat(new, commands.RESET_DONE, copy_lifetime=1)
    assert good.problems == []
    assert (good.fresh_sessions, good.rerun_after_kill) == (1, 1)
    bad = chat(old, "No active session to reset.", copy_lifetime=0)
    assert len(bad.problems) == 3
    assert bad.fresh_sessions == 0


def test_the_memory_verdict_excuses_only_what_a_kill_cut(tmp_path: Path) -> None:
    """A recall cut by a kill, of a note whose ``remember`` a kill cut before writing, or of
    a note older than the 30 days ``recall`` reads, is not judged; a recall that misses a
    note on disk within them fails, whatever its remember was told."""
    checks = bench("year_checks")
    model = bench("year_model").YearModel(now_ms=lambda: 0, prose="")
    daily = tmp_path / ".duragent" / "agents" / "small" / "memory" / "daily"
    daily.mkdir(parents=True)
    (daily / "2026-11-24.md").write_text("- kept\n- written, then cut\n- missed\n")
    (daily / "2026-10-01.md").write_text("- long ago\n")
    model.remembered = {
        "kept": True,
        "written, then cut": None,
        "never written": None,
        "missed": True,
        "long ago": True,
    }
    model.recalls = {
        "kept": True,
        "written, then cut": True,
        "never written": False,
        "missed": None,
        "long ago": False,
    }
    model.days_between = {"kept": 3.0, "long ago": 54.0}  # ``recall`` reads 30 days at most
    problems, _reads, notes = checks.tool_checks(tmp_path, model)
    assert problems == []
    assert (notes.remembered, notes.once, notes.remembers_cut) == (5, 4, 2)
    assert (notes.recalls, notes.found, notes.recalls_cut) == (5, 2, 1)
    assert (notes.never_stored, notes.too_old) == (1, 1)

    model.recalls["written, then cut"] = False  # on disk: its recall must return it
    model.remembered["kept"] = False  # not cut, yet not remembered
    model.days_between["long ago"] = 27.0  # within what recall reads: it must be found
    problems, _reads, notes = checks.tool_checks(tmp_path, model)
    assert len(problems) == 3
    assert notes.never_stored == 1
