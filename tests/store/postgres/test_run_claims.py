"""A due time claimed by a node that died before starting it is started by the next leader.

The claim (``schedule_fires``) comes first, the run's ``running`` line (``schedule_runs``)
next. A node killed between the two left a claim nothing ran: its restart, and any node
once the claim's hold has passed, may claim it again, as long as no run line names it (a
line means the run started, or was judged missed: the run log's own handling applies).
Before, every claim after the first was refused, so that due time never ran (the quick
week with two nodes stalled on it, issue 40).
"""

from __future__ import annotations

import time

import pytest

from duragent.store.postgres import Database, PostgresRunLog
from duragent.store.postgres.cluster import PostgresRuns

postgres_db = pytest.importorskip("tests.store.postgres_db")


def test_the_same_node_claims_again_a_due_time_it_never_started(db: Database) -> None:
    a = PostgresRuns(db, "a", hold_seconds=60)
    assert a.claim("sched_1", 1_000)
    assert a.claim("sched_1", 1_000)  # restarted before its running line


def test_another_node_claims_it_once_the_hold_has_passed(db: Database) -> None:
    a, b = PostgresRuns(db, "a", hold_seconds=0.3), PostgresRuns(db, "b", hold_seconds=0.3)
    assert a.claim("sched_1", 1_000)
    assert not b.claim("sched_1", 1_000)  # a may be writing its running line right now
    time.sleep(0.5)
    assert b.claim("sched_1", 1_000)  # a died before starting it
    assert not a.claim("sched_1", 1_000)  # b holds it now


def test_no_one_claims_again_a_due_time_the_run_log_names(db: Database) -> None:
    a, b = PostgresRuns(db, "a", hold_seconds=0.3), PostgresRuns(db, "b", hold_seconds=0.3)
    log = PostgresRunLog(db)
    assert a.claim("sched_1", 1_000)
    log.append("sched_1", {"status": "running", "due": 1_000, "attempt": 1})
    time.sleep(0.5)
    assert not a.claim("sched_1", 1_000)  # started: an interrupted run is the log's to handle
    assert not b.claim("sched_1", 1_000)
    assert a.claim("sched_1", 2_000)
    log.append("sched_1", {"status": "missed", "due": 2_000, "first_due": 2_000, "count": 1})
    time.sleep(0.5)
    assert not b.claim("sched_1", 2_000)  # judged missed: not run either
