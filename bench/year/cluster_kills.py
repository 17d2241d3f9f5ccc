"""The kills of a run whose second half is two nodes on PostgreSQL (issue 40).

The first half kills the one node, as every run does. The switch (``switch.py``) comes at its
own point between the halves. In the second half the victims alternate: an even kill takes
the node that polls Telegram (usually also the scheduler's and the recoveries' leader), an odd
one a node drawn at random. Half of the victims come back at once (a node restarted under
its own id takes its leases back at once), the other half (the 2nd and 3rd of every four,
so a run with two such kills has one of each) only after the lease has run out,
so the survivor takes over polling, the schedules, the recoveries and the sessions.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import psycopg
from psycopg import sql

from bench.year.store_view import SwitchedView
from bench.year.switch import StoreSwitch
from duragent.testing.telegram_campaign import DRAIN_SECONDS

__all__ = ["NodeKill", "SecondHalf", "leader_holders", "pick_victim", "split_points"]


@dataclass(frozen=True)
class NodeKill:
    """One second-half kill: who died, what it led, and how long it stayed down."""

    victim: str
    led: tuple[str, ...]
    """The leader leases it held when it died (``telegram-polling:…``, ``scheduler``, …)."""
    delay: float
    """Seconds it stayed down after the kill (0: restarted at once)."""
    life: int = -1
    """The life it died in (``ServeNodes.lifetimes``)."""


def split_points(total: int, kills: int, share: float, rng: random.Random) -> tuple[list[int], int]:
    """Kill points (answers so far) for both halves with the switch's point between them.

    Returns the points, sorted, and the index of the switch among them. Half the kills (the
    smaller half) land in ``[total/20, switch)``, the others in ``(switch, 3/4 total)``:
    after three quarters a burst after a restart could finish the run first.
    """
    switch_at = max(2, int(total * share))
    gap = max(1, total // 40)
    first = kills // 2
    early = range(max(1, total // 20), max(2, switch_at - gap))
    late = range(switch_at + gap, max(switch_at + gap + 1, total * 3 // 4))
    before = sorted(rng.sample(early, min(first, len(early))))
    after = sorted(rng.sample(late, min(kills - first, len(late))))
    return [*before, switch_at, *after], len(before)


def leader_holders(dsn: str, schema: str) -> dict[str, str]:
    """Each live leader lease's holder, by lease name (the database's clock decides)."""
    query = sql.SQL(
        "SELECT name, holder FROM {}.leader_leases WHERE holder IS NOT NULL AND expires_at > now()"
    ).format(sql.Identifier(schema))
    with psycopg.connect(dsn, autocommit=True) as conn:
        return {str(name): str(holder) for name, holder in conn.execute(query).fetchall()}


def pick_victim(
    n: int, nodes: list[str], holders: dict[str, str], rng: random.Random, lease: float
) -> NodeKill:
    """The ``n``-th second-half kill (0-based) among the running ``nodes`` (module docstring)."""
    poller = next((h for name, h in holders.items() if name.startswith("telegram-polling")), None)
    victim = poller if n % 2 == 0 and poller in nodes else rng.choice(sorted(nodes))
    led = tuple(sorted(name for name, holder in holders.items() if holder == victim))
    delay = lease + 1.0 if n % 4 in (1, 2) else 0.0
    return NodeKill(victim, led, delay)


class SecondHalf:
    """A campaign's switch to two nodes and its kills after it (module docstring)."""

    def __init__(self, switch: StoreSwitch, rng: random.Random) -> None:
        self.switch = switch
        self.rng = rng
        self.kills: list[NodeKill] = []

    async def switch_stores(self) -> None:
        """Stop the node, copy the store into PostgreSQL, start two nodes (``switch.py``)."""
        await self.switch.run()
        view = self.switch.view
        if isinstance(view, SwitchedView):
            view.switch()

    async def kill_a_node(self, press_held: Callable[[], None]) -> float:
        """Kill the victim, press what was held, restart it (after the lease for half of
        them); returns the kill's ``time.monotonic()``."""
        nodes = self.switch.serve.nodes
        plan = self.switch.plan
        holders = await asyncio.to_thread(leader_holders, plan.dsn, plan.schema)
        running = [name for name, node in nodes.items() if node.pid is not None]
        kill = pick_victim(len(self.kills), running, holders, self.rng, plan.lease_seconds)
        self.kills.append(kill)
        node = nodes[kill.victim]
        kill = replace(kill, life=node.life)
        self.kills[-1] = kill
        await asyncio.sleep(self.rng.uniform(0, 0.15))
        node.kill()
        killed_at = time.monotonic()
        await asyncio.sleep(DRAIN_SECONDS)  # what it sent is stamped before the next start
        press_held()  # pressed while it is down: the other node serves
        await asyncio.sleep(kill.delay)
        node.start()
        await node.wait_ready(accept=("running", "standby"))
        return killed_at
