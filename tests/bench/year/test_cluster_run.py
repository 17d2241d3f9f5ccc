"""``python -m bench.year --cluster``, short: a simulated week whose second half is two nodes.

Halfway through, the one node on files is stopped, ``duragent store copy`` moves its store
into a fresh PostgreSQL schema and nodes a and b serve the rest (``bench/year/switch.py``);
the two kills after it take the node that polls Telegram first, then one kept down past the
2-second lease, so the other node takes over polling, the schedules and the sessions
(``bench/year/cluster_kills.py``). The week must show what the week on files shows
(``week_checks``): a switch and a failover are no excuse to lose or repeat a message or a due
time. Slow (about a minute): run with ``-m slow``; skipped without PostgreSQL.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.year.report import rows, to_json
from bench.year.run import YearConfig, run_year
from bench.year.switch import ClusterPlan
from tests.bench.year.week_checks import assert_a_whole_week

postgres_db = pytest.importorskip("tests.store.postgres_db")


def schema_exists(schema: str) -> bool:
    with postgres_db.psycopg.connect(postgres_db.DSN, autocommit=True) as conn:
        found = conn.execute(
            "SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (schema,)
        ).fetchone()
    return found is not None


@pytest.mark.slow
async def test_a_week_switched_to_two_nodes_on_postgres_loses_nothing_and_fails_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    postgres_db.require_postgres()
    monkeypatch.setenv("PTB_TIMEDELTA", "1")
    plan = ClusterPlan(lease_seconds=2, dsn=postgres_db.DSN)
    config = YearConfig(
        days=7,
        messages=240,
        chats=16,
        kills=4,
        seed=23,
        workdir=tmp_path,
        pulse_days=2,
        cluster=plan,
    )
    result = await run_year(config)
    assert_a_whole_week(result)
    switch = result.switch
    assert switch is not None
    assert switch.problems == []
    assert "copied" in switch.copy_output
    kills = result.node_kills  # half the kills come after the switch: one of them delayed
    assert len(kills) == 2
    assert any(k.delay > 0 for k in kills)
    cluster = result.cluster
    assert cluster is not None
    assert cluster.switch_sim_ms is not None
    b = cluster.replies_by_node.get("b", 0) + cluster.polls_by_node.get("b", 0)
    assert b > 0, f"node b never answered nor polled: {cluster}"
    assert cluster.db_bytes
    table = dict(rows(result))
    assert f"switch to PostgreSQL, two nodes (schema {plan.schema})" in table
    assert to_json(result)["cluster"]["node_kills"]
    assert not schema_exists(plan.schema)
