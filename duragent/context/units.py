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

import bisect
import operator
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from duragent.context.budget import BudgetReport
from duragent.core.messages import Message, Role

__all__ = ["MISSING_RESULT", "HistoryCache", "TurnCache", "Unit", "split", "split_newest_first"]

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

    Within one turn messages are only appended, masking only grows (the middle widens) and a
    dropped group stays dropped, so what was decided for the older units still holds.
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


class HistoryCache:
    """One session's history units (with their token costs), kept from request to request.

    Between two requests a session's history (the Layer 1 window) only gains messages at the
    end and loses them at the start. The units that are still whole are reused with their
    counts; the new head (if the window cut into a group) and the tail from the last unit on
    are split again. Rendering a 2,000-message history is then a walk over cached numbers
    instead of splitting and counting every message. Any other change (an edited or reordered
    history, another counter) simply starts over.
    """

    __slots__ = ("_base", "_counter", "_messages", "_starts", "_units")

    def __init__(self) -> None:
        self._messages: list[Message] = []
        self._units: list[Unit] = []
        self._starts: list[int] = []  # where each unit starts, in the sliding window's frame
        self._base = 0  # where ``_messages[0]`` is in that frame (grows as the window slides)
        self._counter: object | None = None

    def units(self, history: Sequence[Message], counter: object) -> list[Unit]:
        """The units of ``history``, oldest first (costs already counted where known)."""
        if counter is not self._counter:
            self._counter, self._messages, self._units, self._starts = counter, [], [], []
        units, starts = self._units, self._starts
        dropped = self._dropped_from_front(history)
        base = self._base + (0 if dropped is None else dropped)
        # reuse the whole units that start at or after the cut, except the last one (it may
        # have gained results); with no continuation nothing is reused
        keep_from = len(units) if dropped is None else bisect.bisect_left(starts, base)
        keep_to = max(keep_from, len(units) - 1)
        if keep_from < keep_to:
            head_end, tail_start = starts[keep_from] - base, starts[keep_to] - base
        else:
            head_end = tail_start = 0
        head = split(history[:head_end])
        tail = split(history[tail_start:])
        self._starts = (
            _starts_of(head, base) + starts[keep_from:keep_to] + _starts_of(tail, base + tail_start)
        )
        self._units = head + units[keep_from:keep_to] + tail
        self._messages = list(history)
        self._base = base
        return self._units

    def _dropped_from_front(self, history: Sequence[Message]) -> int | None:
        """How many old messages were cut from the front, if ``history`` continues them."""
        old = self._messages
        if not old or not history:
            return None
        first = history[0]
        dropped = next((k for k, message in enumerate(old) if message is first), None)
        if dropped is None:
            return None
        kept = len(old) - dropped
        if kept > len(history) or not all(map(operator.is_, old[dropped:], history[:kept])):
            return None
        return dropped


def _starts_of(units: list[Unit], offset: int) -> list[int]:
    starts, at = [], offset
    for unit in units:
        starts.append(at)
        at += unit.source
    return starts
