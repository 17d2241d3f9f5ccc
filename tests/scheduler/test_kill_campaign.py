"""The SIGKILL campaign, short: five kills of a real ``duragent serve`` (the long one is
``python -m bench.components.scheduler --kills 25``). ``kill_campaign.py``'s docstring defines
each check."""

from __future__ import annotations

from pathlib import Path

from tests.scheduler.kill_campaign import run_kill_campaign


async def test_each_due_time_has_one_outcome_and_each_message_is_in_the_session_once(
    tmp_path: Path,
) -> None:
    result = await run_kill_campaign(tmp_path, kills=5, seed=18, up_seconds=1.5)
    assert result.problems == []
    assert result.kills == 5
    assert result.outcomes["ok"] > 0
    assert result.delivered == result.recorded > 0
