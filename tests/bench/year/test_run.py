"""``python -m bench.year``, short: a simulated week against real components, and its verdict.

The long run (a year, up to 100,000 messages, 50 SIGKILLs) is ``python -m bench.year``; this
one runs the same engine (``bench/year/run.py``) for a week of 240 messages over 16 chats with
two kills of ``duragent serve``, about half a minute here, and checks the verdict the benchmark
prints, including the TTL sweep on the simulated calendar (a chat that falls silent after the
first 30 % has its session ended; every other chat keeps one). A failure's ``problems`` name
the chat, message or due time; the workspace, every serving process's log and the run logs
stay in ``tmp_path``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.year.run import YearConfig, run_year


async def test_a_simulated_week_loses_nothing_repeats_nothing_and_never_overflows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "1")
    config = YearConfig(
        days=7, messages=240, chats=16, kills=2, seed=23, workdir=tmp_path, pulse_days=2
    )
    result = await run_year(config)
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
