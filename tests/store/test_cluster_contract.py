"""The ``Cluster`` contract: two nodes over one backend do each thing once.

Runs on the memory backend (what a workspace on files uses) and on PostgreSQL, where the
two nodes are two pools of connections to one schema, as two servers would be.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest

from duragent.store.cluster import Cluster, MemoryCluster

Nodes = Callable[[float], tuple[Cluster, Cluster]]
"""Two nodes' views, with inbound holds and leader leases of the given seconds."""


@pytest.fixture(params=["memory", "postgres"])
def nodes(request: pytest.FixtureRequest) -> Iterator[Nodes]:
    with ExitStack() as stack:
        if request.param == "memory":

            def make(seconds: float) -> tuple[Cluster, Cluster]:
                shared = MemoryCluster(hold_seconds=seconds, lease_seconds=seconds / 2)
                return shared.node("a"), shared.node("b")

        else:
            from duragent.store.postgres import migrate, postgres_cluster
            from tests.store import postgres_db

            schema = stack.enter_context(postgres_db.fresh_schema())

            def make(seconds: float) -> tuple[Cluster, Cluster]:
                views = []
                for name in ("a", "b"):
                    db = stack.enter_context(postgres_db.database(schema))
                    db.open()
                    migrate(db)
                    views.append(postgres_cluster(db, name, lease_seconds=seconds / 2))
                return views[0], views[1]

        yield make


def test_a_message_delivered_to_two_nodes_is_taken_by_the_first_only(nodes: Nodes) -> None:
    a, b = nodes(60)
    assert a.inbound.claim("telegram", "42", "7") == "first"
    assert b.inbound.claim("telegram", "42", "7") == "busy"  # a records it right now
    a.inbound.settle("telegram", "42", "7")
    assert b.inbound.claim("telegram", "42", "7") == "duplicate"
    assert a.inbound.claim("telegram", "42", "7") == "duplicate"


def test_the_key_is_gateway_chat_and_message(nodes: Nodes) -> None:
    a, b = nodes(60)
    assert a.inbound.claim("telegram", "42", "7") == "first"
    assert b.inbound.claim("telegram", "43", "7") == "first"
    assert b.inbound.claim("discord", "42", "7") == "first"


def test_a_node_retrying_its_own_claim_may_go_on(nodes: Nodes) -> None:
    a, _ = nodes(60)
    assert a.inbound.claim("telegram", "42", "7") == "first"
    assert a.inbound.claim("telegram", "42", "7") == "first"


def test_a_released_claim_is_free_for_a_redelivery_at_once(nodes: Nodes) -> None:
    a, b = nodes(60)
    assert a.inbound.claim("telegram", "42", "7") == "first"
    a.inbound.release("telegram", "42", "7")
    assert b.inbound.claim("telegram", "42", "7") == "first"


def test_a_claim_whose_node_died_is_taken_over_after_its_hold(nodes: Nodes) -> None:
    a, b = nodes(0.3)
    assert a.inbound.claim("telegram", "42", "7") == "first"  # then a dies, unsettled
    assert b.inbound.claim("telegram", "42", "7") == "busy"
    time.sleep(0.4)
    assert b.inbound.claim("telegram", "42", "7") == "first"
    b.inbound.settle("telegram", "42", "7")
    a.inbound.release("telegram", "42", "7")  # a late release does not undo b's settle
    assert a.inbound.claim("telegram", "42", "7") == "duplicate"


def test_racing_claims_give_one_first(nodes: Nodes) -> None:
    a, b = nodes(60)
    outcomes: list[str] = []
    start = threading.Barrier(8)

    def claim(node: Cluster) -> None:
        start.wait()
        outcomes.append(node.inbound.claim("telegram", "42", "9"))

    threads = [threading.Thread(target=claim, args=(n,)) for n in (a, b) * 4]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(set(outcomes)) in (["busy", "first"], ["first"])
    assert outcomes.count("busy") >= 4  # the other node's four claims at least


def test_one_node_holds_a_leader_lease_until_it_expires_or_is_released(nodes: Nodes) -> None:
    a, b = nodes(0.6)  # leases of 0.3 s
    assert a.leaders.acquire("telegram-polling")
    assert not b.leaders.acquire("telegram-polling")
    assert a.leaders.acquire("telegram-polling")  # renewed
    assert b.leaders.acquire("scheduler")  # another loop, another lease
    time.sleep(0.45)  # a stopped renewing (died)
    assert b.leaders.acquire("telegram-polling")
    assert not a.leaders.acquire("telegram-polling")  # a came back: b leads now
    b.leaders.release("telegram-polling")
    assert a.leaders.acquire("telegram-polling")  # released: taken at once


def test_each_due_time_is_claimed_once_across_nodes(nodes: Nodes) -> None:
    a, b = nodes(60)
    assert a.runs.claim("sched_1", 1_000)
    assert not b.runs.claim("sched_1", 1_000)
    assert b.runs.claim("sched_1", 2_000)
    assert b.runs.claim("sched_2", 1_000)


def test_a_node_claiming_its_own_due_time_again_may_start_it(nodes: Nodes) -> None:
    """Its claim's answer was lost, or it restarted before starting the run: no one else
    started that due time (its run's ``running`` line follows the claim)."""
    a, b = nodes(60)
    assert a.runs.claim("sched_1", 1_000)
    assert a.runs.claim("sched_1", 1_000)
    assert not b.runs.claim("sched_1", 1_000)
