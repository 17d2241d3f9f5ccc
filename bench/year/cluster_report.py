"""What a run whose second half is two nodes on PostgreSQL adds to the year's table.

The switch (``switch.py``) and the second half's kills (``cluster_kills.py``) are judged
where they happen (their problems fail the run); this module only counts what an operator
reading the table wants to know about them: when the switch came and what it cost, which
node each victim was and what it led when it died, whether the other node really served
(the replies and the polls each node made: a second node that never answered anything would
make the cluster half of the run a file-store run with extra steps), and how big the
database grew. ``gather`` reads it at the end of the run, before the schema is dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import psycopg

from bench.year.store_view import StoreView
from bench.year.timing import DAY_MS
from duragent.testing import FakeTelegram

if TYPE_CHECKING:  # run.py imports this module
    from bench.year.campaign import YearCampaign
    from bench.year.run import YearResult

__all__ = ["ClusterFacts", "cluster_json", "cluster_rows", "gather"]

MB = 1024 * 1024
POLLER = "telegram-polling"
"""The leader lease of the node that polls Telegram (``telegram-polling:<bot id>``)."""
SCHEDULER = "scheduler"


@dataclass
class ClusterFacts:
    """What the run's end knew of its two nodes (module docstring)."""

    switch_sim_ms: int | None = None
    """Simulated ms from the run's start to the switch (None: it never came)."""
    replies_by_node: dict[str, int] = field(default_factory=dict)
    """Replies (final texts, not approval prompts) each node sent, by the life that sent it."""
    polls_by_node: dict[str, int] = field(default_factory=dict)
    """``getUpdates`` calls each node made, of the calls the fake Telegram still keeps."""
    db_bytes: int | None = None
    """The schema's tables with their indexes and TOAST (None: the database did not answer)."""


def gather(campaign: YearCampaign, tg: FakeTelegram, view: StoreView) -> ClusterFacts:
    """Count at the run's end, the nodes stopped and the schema not yet dropped."""
    nodes = campaign.serve.node_of_life
    replies = Counter(
        nodes[s.lifetime] for s in campaign.sent if not s.prompt and 0 <= s.lifetime < len(nodes)
    )
    polls = Counter(call.node for call in tg.calls("getUpdates"))
    switch_ms = campaign.switch_sim_ms
    return ClusterFacts(
        switch_sim_ms=None if switch_ms is None else switch_ms - campaign.start_ms,
        replies_by_node=dict(sorted(replies.items())),
        polls_by_node=dict(sorted(polls.items())),
        db_bytes=_db_bytes(view),
    )


def _db_bytes(view: StoreView) -> int | None:
    """The database's size through the run's view (0 before a switch: files only); None
    when the database does not answer, which must not cost the run its table."""
    try:
        return view.db_bytes()
    except psycopg.Error:
        return None


def cluster_rows(r: YearResult) -> list[tuple[str, str]]:
    """The switch, the second half's kills, each node's share and the database's size."""
    if r.switch is None:
        return []
    s, facts = r.switch, r.cluster or ClusterFacts()
    day = "never" if facts.switch_sim_ms is None else f"day {facts.switch_sim_ms / DAY_MS:.1f}"
    out = [
        (f"switch to PostgreSQL, two nodes (schema {s.schema})", day),
        (
            "  store copy / down (stop to both nodes ready)",
            f"{s.copy_seconds:.1f} s / {s.down_seconds:.1f} s",
        ),
    ]
    said = [line.strip() for line in s.copy_output.splitlines() if line.strip()]
    out += list(zip(("  store copy said", "    and"), said, strict=False))
    kills = r.node_kills
    names = sorted({*facts.replies_by_node, *facts.polls_by_node, "a", "b"})
    by = " / ".join(names)
    victims = Counter(k.victim for k in kills)
    pollers = sum(any(name.startswith(POLLER) for name in k.led) for k in kills)
    out += [
        (f"second-half kills / of node {by}", f"{len(kills)} / {_split(victims, names)}"),
        (
            "  of the poller / of the scheduler's leader",
            f"{pollers} / {sum(SCHEDULER in k.led for k in kills)}",
        ),
        (
            "  back at once / down past the lease",
            f"{sum(k.delay == 0 for k in kills)} / {sum(k.delay > 0 for k in kills)}",
        ),
        (f"replies sent by node {by}", _split(facts.replies_by_node, names)),
        (f"  getUpdates by node {by} (calls kept)", _split(facts.polls_by_node, names)),
        (
            "database (tables, indexes, TOAST)",
            "not read" if facts.db_bytes is None else f"{facts.db_bytes / MB:.1f} MB",
        ),
    ]
    return out


def _split(counts: Mapping[str, int], names: list[str]) -> str:
    return " / ".join(f"{counts.get(name, 0):,}" for name in names)


def cluster_json(r: YearResult) -> dict[str, Any]:
    """The switch, the second half's kills and the counts, for ``report.to_json`` ({}: none)."""
    if r.switch is None:
        return {}
    facts = r.cluster or ClusterFacts()
    return {
        "cluster": {
            "switch": asdict(r.switch),
            "switch_sim_day": None if facts.switch_sim_ms is None else facts.switch_sim_ms / DAY_MS,
            "node_kills": [
                {"victim": k.victim, "led": list(k.led), "delay": k.delay} for k in r.node_kills
            ],
            "replies_by_node": facts.replies_by_node,
            "polls_by_node": facts.polls_by_node,
            "db_bytes": facts.db_bytes,
        }
    }
