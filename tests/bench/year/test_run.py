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
from tests.bench.year.week_checks import assert_a_whole_week


async def test_a_simulated_week_loses_nothing_repeats_nothing_and_never_overflows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "1")
    config = YearConfig(
        days=7, messages=240, chats=16, kills=2, seed=23, workdir=tmp_path, pulse_days=2
    )
    result = await run_year(config)
    assert_a_whole_week(result)
