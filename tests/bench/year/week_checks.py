"""What every quick simulated week must show, whatever its store: shared by the week on
files (``test_run.py``) and the week whose second half is two nodes on PostgreSQL
(``test_cluster_run.py``), so both are held to the same verdict.

Pytest rewrites the asserts of test modules only: the ones here that could fail for many
reasons carry what to read.
"""

from __future__ import annotations

from bench.year.run import YearResult


def assert_a_whole_week(result: YearResult) -> None:
    """Nothing lost, nothing repeated but the documented crash re-sends, every check run."""
    assert result.problems == [], result.problems[:30]
    assert result.ok
    campaign = result.campaign
    assert campaign.kills == result.config.kills
    assert campaign.missing == 0, campaign.problems[:30]
    assert campaign.sent_twice_real == 0, campaign.problems[:30]
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
