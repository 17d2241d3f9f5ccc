"""Messages grouped into the units a request keeps or drops whole, and caches of them.

A unit is one message, or an assistant tool call with exactly its results (a missing result is
repaired with a synthetic error result; orphan and duplicate results are dropped). Units are
what Layer 2 and 3c choose among (see ``render``).

Splitting is local: a unit's extent depends only on its own messages and, for a run of tool
results, on the message right before the run; a unit never starts inside a run of results. So
a slice of a conversation that starts at a unit boundary splits exactly as it does in place,
which is what lets the caches below re-split only what changed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from duragent.context.budget import BudgetReport
from duragent.core.messages import Message, Role

if TYPE_CHECKING:
    from duragent.context.tokens import TokenCounter

__all__ = ["MISSING_RESULT", "TurnCache", "Unit", "split", "split_newest_first", "unit_cost"]

MISSING_RESULT = "Error: no result was recorded for this tool call"


@dataclass(slots=True)
class Unit:
    """Messages that travel together: one message, or a tool call with all its results."""

    messages: list[Message]
    source: int = 1  # how many original messages it stands for (for the omitted count)
    group: bool = False
    tokens: int = 0  # cost by the counter in use (0: not counted yet)
    results: list[int] = field(default_factory=list)  # indexes of tool results in messages
    masked: set[int] = field(default_factory=set)  # indexes already replaced by a mask
    repaired: int = 0  # calls given a synthetic result
    orphans: int = 0  # results dropped (no call, or a duplicate)

    def report_to(self, report: BudgetReport) -> None:
        """Count this unit's repairs in ``report`` (once per request that looks at it)."""
        report.calls_repaired += self.repaired
        report.orphans_dropped += self.orphans


def unit_cost(unit: Unit, counter: TokenCounter) -> int:
    """``unit``'s cost by ``counter``, recorded on the unit."""
    unit.tokens = counter.sum_messages(unit.messages)
    return unit.tokens


def _group(call: Message, results: list[Message]) -> Unit:
    by_id: dict[str, Message] = {}
    for r in results:
        if r.tool_call_id and r.tool_call_id not in by_id:
            by_id[r.tool_call_id] = r
    out = [call]
    used = repaired = 0
    for call_id in dict.fromkeys(c.id for c in call.tool_calls):
        found = by_id.get(call_id)
        if found is None:
            repaired += 1
            found = Message.tool(call_id, MISSING_RESULT)
        else:
            used += 1
        out.append(found)
    return Unit(
        out,
        source=1 + len(results),
        group=True,
        results=list(range(1, len(out))),
        repaired=repaired,
        orphans=len(results) - used,
    )


def split_newest_first(messages: Sequence[Message]) -> Iterator[Unit]:
    """Units from the newest message back, lazily (so a request that stops early pays less)."""
    i = len(messages) - 1
    while i >= 0:
        m = messages[i]
        if m.role is Role.TOOL:
            j = i
            while j >= 0 and messages[j].role is Role.TOOL:
                j -= 1
            results = list(messages[j + 1 : i + 1])
            if j >= 0 and messages[j].role is Role.ASSISTANT and messages[j].tool_calls:
                yield _group(messages[j], results)
                i = j - 1
            else:
                yield Unit([], source=len(results), orphans=len(results))
                i = j
        elif m.role is Role.ASSISTANT and m.tool_calls:
            yield _group(m, [])
            i -= 1
        else:
            yield Unit([m])
            i -= 1


def split(messages: Sequence[Message]) -> list[Unit]:
    """All units, oldest first."""
    units = list(split_newest_first(messages))
    units.reverse()
    return units


class TurnCache:
    """The current turn's units, kept between the loop's calls so each call costs O(new).

    Within one turn messages are only appended and masking only grows (a turn only grows, so
    a result that had to be masked still has to be), so the masks written into the older
    units still hold. Which iterations a request leaves out, and how far the latest results
    shrink, is decided per request (``turn_fit``): the cache keeps every unit.
    """

    __slots__ = ("boundary", "units")

    def __init__(self) -> None:
        self.units: list[Unit] = []
        self.boundary = 0  # index in the turn where the last cached unit starts

    def update(self, turn: Sequence[Message], report: BudgetReport) -> list[Unit]:
        """The units of ``turn``, re-splitting only from the last cached unit on."""
        if self.units:
            self.units.pop()  # it may have gained results since: split it again
        fresh = split(turn[self.boundary :])
        for unit in fresh:
            unit.report_to(report)
        if fresh:
            self.boundary += sum(u.source for u in fresh[:-1])
        self.units.extend(fresh)
        return self.units
