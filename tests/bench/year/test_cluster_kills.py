"""The second half's kill plan (``bench/year/cluster_kills.py``): pure functions, no node.

Where the kills land decides what a cluster run proves: a kill before the switch tests the
file store, one after it the failover; a kill in the last quarter could land after the
campaign has nothing left to answer. Who dies decides which takeover is tested: the poller
(polling, the scheduler, the recoveries move) or a random node, back at once or after the
lease.
"""

from __future__ import annotations

import random

import pytest

from bench.year.cluster_kills import pick_victim, split_points

LEASE = 2.0
HOLDERS = {"telegram-polling:123": "b", "scheduler": "b", "recovery:telegram": "a"}


@pytest.mark.parametrize(
    ("total", "kills", "share"), [(240, 4, 0.5), (1000, 7, 0.5), (400, 3, 0.3)]
)
@pytest.mark.parametrize("seed", range(5))
def test_the_points_are_sorted_with_the_switch_between_the_halves(
    total: int, kills: int, share: float, seed: int
) -> None:
    points, index = split_points(total, kills, share, random.Random(seed))
    switch_at = max(2, int(total * share))
    gap = max(1, total // 40)
    assert points == sorted(points)
    assert len(points) == kills + 1
    assert points[index] == switch_at
    before, after = points[:index], points[index + 1 :]
    assert len(before) == kills // 2  # the smaller half before the switch
    assert len(after) == kills - kills // 2
    assert all(total // 20 <= p < switch_at - gap for p in before)
    assert all(switch_at + gap <= p < total * 3 // 4 for p in after)


def test_even_kills_take_the_poller_and_the_2nd_and_3rd_of_four_wait_past_the_lease() -> None:
    rng = random.Random(3)
    picked = [pick_victim(n, ["a", "b"], HOLDERS, rng, LEASE) for n in range(8)]
    assert [k.victim for k in picked[::2]] == ["b"] * 4
    assert [k.delay for k in picked] == [0.0, LEASE + 1, LEASE + 1, 0.0] * 2
    for kill in picked:  # what each victim led when it died: the holders' leases, sorted
        expected = sorted(name for name, holder in HOLDERS.items() if holder == kill.victim)
        assert list(kill.led) == expected


def test_an_even_kill_draws_a_running_node_when_the_poller_is_down() -> None:
    kill = pick_victim(0, ["a"], HOLDERS, random.Random(1), LEASE)
    assert kill.victim == "a"
    assert kill.led == ("recovery:telegram",)
    assert kill.delay == 0.0
    nobody = pick_victim(2, ["a", "b"], {}, random.Random(1), LEASE)
    assert nobody.victim in ("a", "b")
    assert nobody.led == ()
