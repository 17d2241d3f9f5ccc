"""Two nodes' lives in one numbering: calls traced to the node and life that made them.

The nodes are real child processes (a sleeping Python stands in for ``duragent serve``: the
lives, kills and stops are what is tested, not the server).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from duragent.testing.serve_nodes import ServeNodes

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


@pytest.fixture
def nodes(tmp_path: Path) -> Iterator[ServeNodes]:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    served = ServeNodes(tmp_path / "a" / "duragent.yaml", command=SLEEPER)
    served.add("b", tmp_path / "b" / "duragent.yaml", command=SLEEPER)
    yield served
    served.stop_all()


def test_each_start_of_either_node_is_the_next_life_of_one_numbering(nodes: ServeNodes) -> None:
    nodes.start()
    nodes.nodes["b"].start()
    nodes.kill()
    nodes.start()
    assert nodes.node_of_life == ["a", "b", "a"]
    assert nodes.killed == [True, False, False]
    assert len(nodes.lifetimes) == 3
    assert sorted(nodes.pids()) == sorted(p for p in (nodes.pid, nodes.nodes["b"].pid) if p)


def test_a_call_is_traced_to_the_life_of_the_node_that_made_it(nodes: ServeNodes) -> None:
    nodes.start()
    time.sleep(0.01)
    nodes.nodes["b"].start()
    time.sleep(0.01)
    at = time.monotonic()
    assert nodes.lifetime_of(at, "a") == 0
    assert nodes.lifetime_of(at, "b") == 1
    assert nodes.lifetime_of(at) == 1  # without a node: the newest life, as with one process


def test_a_copy_the_older_survivor_sends_after_a_nodes_kill_is_a_resend(nodes: ServeNodes) -> None:
    nodes.nodes["b"].start()  # life 0: b, the survivor, started first
    nodes.start()  # life 1: a
    sent_by_a = time.monotonic()
    nodes.kill()
    resent_by_b = time.monotonic()
    a_life, b_life = nodes.lifetime_of(sent_by_a, "a"), nodes.lifetime_of(resent_by_b, "b")
    assert (a_life, b_life) == (1, 0)
    assert nodes.resent_after_kill(a_life, b_life, resent_by_b)
    assert not nodes.resent_after_kill(b_life, a_life, sent_by_a)  # b was never killed


def test_stopping_every_node_ends_every_life_unkilled(nodes: ServeNodes) -> None:
    nodes.start()
    nodes.nodes["b"].start()
    nodes.stop_all()
    assert nodes.pids() == []
    assert all(end < float("inf") for _, end in nodes.lifetimes)
    assert nodes.killed == [False, False]
