"""A session's history, kept between requests with running sums, so fitting it costs O(change).

Between two requests a session's history (the Layer 1 window) only gains messages at the end
and loses them at the start. ``HistoryCache`` keeps the history's units from one request to
the next, re-splitting only what changed, and beside them running sums (prefix sums) of what
Layer 2 asks about a run of units: token cost, messages, original messages, repairs. Every
question Layer 2 asks ("how many of the newest units fit in N tokens?", "how many messages is
that?", "which messages?") is then a difference of two sums, a binary search or one list
slice, whatever the history's length: a turn in a 2,000-message chat costs about what a turn
in a 10-message chat does (``bench/http/api.py``'s long-session rows).

Token costs stay lazy: a unit is counted only when a request's walk reaches it (newest first),
so a cold session with a long history counts what fits the window, not the whole history.
The counted units are therefore always a run at the newest end, ``units[counted_from:]``; the
walk extends that run leftwards when it needs older units. Units split on arrival (the newest
few) are counted at once, because every request looks at them.

``render.fit_request`` uses ``fit`` when the caller passes the session's cache (the loop
does); without one it walks the history the plain way, and ``tests/context/test_units.py``
checks that both give the same request and report for random sliding histories.
"""

from __future__ import annotations

import bisect
import operator
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate, compress, count, islice
from typing import TYPE_CHECKING

from duragent.context.units import Unit, split
from duragent.core.messages import Message, Role

if TYPE_CHECKING:
    from duragent.context.tokens import TokenCounter

__all__ = ["HistoryCache", "HistoryFit"]

EAGER_UNITS = 64
"""Units split on arrival are counted at once up to this many (more: a cold start, lazy)."""

Cost = Callable[[Unit], int]


@dataclass(slots=True)
class HistoryFit:
    """What Layer 2 chose: the history's newest ``units[first:end]`` (``end`` excludes the pin)."""

    messages: list[Message]  # the chosen units' messages, oldest first (without the pinned one)
    tokens: int  # their cost
    source: int  # how many original messages they stand for
    sent: int  # how many messages they are
    repaired: int  # repairs in the units the walk reached
    orphans: int  # orphans dropped in the units the walk reached


def _prefix(units: Iterable[Unit], key: Callable[[Unit], int], start: int) -> list[int]:
    """Running sums of ``key`` over ``units`` from ``start`` (``start`` itself first)."""
    return list(accumulate(map(key, units), initial=start))


def _before(units: list[Unit], key: Callable[[Unit], int], end: int) -> list[int]:
    """Running sums over ``units`` that end at ``end`` (the last value is not included)."""
    sums = _prefix(units, key, 0)
    return [end - sums[-1] + s for s in sums[:-1]]


_SOURCE = operator.attrgetter("source")
_REPAIRED = operator.attrgetter("repaired")
_ORPHANS = operator.attrgetter("orphans")


def _size(unit: Unit) -> int:
    return len(unit.messages)


class HistoryCache:
    """One session's history units with their running sums, kept from request to request."""

    __slots__ = (
        "_at",
        "_base",
        "_cost",
        "_counted_from",
        "_counter",
        "_flat",
        "_messages",
        "_orphans",
        "_repaired",
        "_source",
        "_starts",
        "_summed",
        "_summed_by",
        "_summed_sums",
        "_units",
    )

    def __init__(self) -> None:
        self._reset(None)
        self._summed: list[Message] = []  # the history ``message_tokens`` last summed
        self._summed_by: object | None = None  # the counter it was counted with
        self._summed_sums = [0]  # running sums of its messages' counts (length n + 1)

    def _reset(self, counter: object | None) -> None:
        self._messages: list[Message] = []
        self._units: list[Unit] = []
        self._starts: list[int] = []  # where each unit starts, in the sliding window's frame
        self._base = 0  # where ``_messages[0]`` is in that frame (grows as the window slides)
        self._counter = counter
        # running sums over the units (length n + 1; only differences are meaningful)
        self._at = [0]  # messages: unit i's messages are _flat[_at[i] - _at[0]:_at[i+1] - _at[0]]
        self._source = [0]
        self._repaired = [0]
        self._orphans = [0]
        self._flat: list[Message] = []  # every unit's messages, in order
        # token costs over the counted run units[_counted_from:] (length n - _counted_from + 1)
        self._counted_from = 0
        self._cost = [0]

    def units(
        self, history: Sequence[Message], counter: object, cost: Cost | None = None
    ) -> list[Unit]:
        """The units of ``history``, oldest first (costs already counted where known).

        ``cost`` counts a unit (and records it on the unit); with it, units that arrived
        since the last request are counted at once.
        """
        if counter is not self._counter:
            self._reset(counter)  # another counter: nothing carries over
        units, starts = self._units, self._starts
        continued = _continuation(self._messages, history)
        dropped = 0 if continued is None else continued[0]
        base = self._base + dropped
        # reuse the whole units that start at or after the cut, except the last one (it may
        # have gained results) and, from the first message that is not the same object (a
        # message with attachments changes form when its images age), the unit it is in and
        # the one before (what follows a unit decides where it ends: a tool result there
        # would have joined it); with no continuation nothing is reused
        keep_from = len(units) if continued is None else bisect.bisect_left(starts, base)
        keep_to = max(keep_from, len(units) - 1)
        if continued is not None and continued[1] < len(self._messages) - dropped:
            changed = bisect.bisect_right(starts, base + continued[1]) - 1
            keep_to = max(keep_from, min(keep_to, changed - 1))
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
        self._carry_sums(head, keep_from, keep_to, tail)
        self._carry_costs(head, keep_from, keep_to, tail, cost)
        return self._units

    def _carry_sums(self, head: list[Unit], keep_from: int, keep_to: int, tail: list[Unit]) -> None:
        """The running sums for the new units: the kept middle's are reused as they are."""
        at, flat = self._at, self._flat
        kept = flat[at[keep_from] - at[0] : at[keep_to] - at[0]]
        for name, key in (
            ("_source", _SOURCE),
            ("_repaired", _REPAIRED),
            ("_orphans", _ORPHANS),
            ("_at", _size),
        ):
            old: list[int] = getattr(self, name)
            front, back = old[keep_from], old[keep_to]
            middle = old[keep_from : keep_to + 1]
            setattr(self, name, _before(head, key, front) + middle + _prefix(tail, key, back)[1:])
        self._flat = _messages_of(head) + kept + _messages_of(tail)

    def _carry_costs(
        self, head: list[Unit], keep_from: int, keep_to: int, tail: list[Unit], cost: Cost | None
    ) -> None:
        """The counted run after the change: the kept units' costs, and the new ones if few."""
        old_from, old_cost = self._counted_from, self._cost
        n = len(self._units)
        if cost is None or len(tail) > EAGER_UNITS:
            self._counted_from, self._cost = n, [0]  # a cold start: the walk counts lazily
            return
        tail_costs = [u.tokens or cost(u) for u in tail]
        first_new = n - len(tail)
        if old_from <= keep_to and keep_from < keep_to:
            start = max(old_from, keep_from)  # the old counted run, within the kept units
            kept = old_cost[start - old_from : keep_to - old_from + 1]
            self._counted_from = len(head) + start - keep_from
            self._cost = kept + list(accumulate(tail_costs, initial=kept[-1]))[1:]
        else:
            self._counted_from = first_new
            self._cost = list(accumulate(tail_costs, initial=0))

    def message_tokens(self, history: Sequence[Message], counter: TokenCounter) -> int:
        """``counter.sum_messages(history)``, counting only what changed since the last call.

        The summaries tier asks it before every turn (``plan_summary``); summing the whole
        history each time grew with the chat (~0.15 ms at 1,000 messages, 2 % of a turn).
        Here the messages kept from the last call are recognised by identity (C-level list
        comparisons) and their running sums reused, so a turn pays for its new messages.
        Message counts are fixed per message, so the total is the same integer.
        """
        new = history if isinstance(history, list) else list(history)
        old, sums = self._summed, self._summed_sums
        continued = _continuation(old, new) if counter is self._summed_by else None
        if continued is None:
            old.clear()
            sums = [0]
            kept = 0
        else:
            dropped, kept = continued
            if dropped:
                del old[:dropped]
                sums = sums[dropped:]
            if kept < len(old):  # a message changed (or the history ends sooner): recount on
                del old[kept:]
                sums = sums[: kept + 1]
        fresh = new[kept:]
        old.extend(fresh)
        sums += list(accumulate(map(counter.count_message, fresh), initial=sums[-1]))[1:]
        self._summed_sums, self._summed_by = sums, counter
        return sums[-1] - sums[0]

    # --- Layer 2 questions, in time independent of the history's length ----------------------

    def _count_back(self, limit: int, end: int, cost: Cost) -> int:
        """The smallest ``i`` whose ``units[i:end]`` cost at most ``limit``, counting lazily.

        Units older than the counted run are counted one by one, newest first, up to and
        including the first that does not fit (the walk reached it), then added to the run.
        """
        c, sums, units = self._counted_from, self._cost, self._units
        if c > end:  # the newest units are not counted yet (a cold start): count them
            self._extend_counted(c, [u.tokens or cost(u) for u in reversed(units[end:c])])
            c, sums = self._counted_from, self._cost
        total = sums[end - c] - sums[0]
        if total > limit:
            i = c + bisect.bisect_left(sums, sums[end - c] - limit, 0, end - c + 1)
            return min(i, end)
        costs: list[int] = []
        i = c
        while i > 0:
            spent = units[i - 1].tokens or cost(units[i - 1])
            costs.append(spent)
            if total + spent > limit:
                break
            total += spent
            i -= 1
        self._extend_counted(c, costs)
        return i

    def _extend_counted(self, c: int, costs_newest_first: list[int]) -> None:
        """Add the costs of ``units[c - k:c]`` (given newest first) to the counted run."""
        if not costs_newest_first:
            return
        first = self._cost[0]
        running = list(accumulate(costs_newest_first, initial=0))[1:]
        self._cost = [first - s for s in reversed(running)] + self._cost
        self._counted_from = c - len(costs_newest_first)

    def _tokens(self, first: int, end: int) -> int:
        c = self._counted_from
        return self._cost[end - c] - self._cost[first - c]

    def cost_before(self, position: int, cost: Cost) -> int | None:
        """What the units before message ``position`` of the last ``units`` history cost.

        None when no unit starts at ``position`` (it is inside a tool call's group). Counts
        every older unit not counted yet, once: later questions, and later requests, reuse
        the sums (the summaries tier asks this before every turn).
        """
        start = self._base + position
        k = bisect.bisect_left(self._starts, start)
        if k == len(self._starts) or self._starts[k] != start:
            return None
        if k == 0:
            return 0
        self._count_back(sys.maxsize, k, cost)
        return self._tokens(0, k)

    def pinned(self) -> Unit | None:
        """The latest unit when it is a user message (always sent)."""
        if self._units and self._units[-1].messages:
            last = self._units[-1]
            if last.messages[0].role is Role.USER:
                return last
        return None

    def floor(self, notice_cost: int, end: int, cost: Cost) -> tuple[int, int]:
        """(least the history before ``end`` costs when cut, units the peek reached).

        The least is its truncation notice, or the whole of it when that is cheaper.
        """
        if end == 0:
            return 0, 0
        i = self._count_back(notice_cost - 1, end, cost)
        if i == 0:
            return self._tokens(0, end), end
        return notice_cost, end - i + 1

    def fit(self, budget: int, notice_cost: int, end: int, reached: int, cost: Cost) -> HistoryFit:
        """The newest units before ``end`` that fit ``budget`` (with the notice if cut).

        Greedy, like the plain walk: it stops at the first unit that does not fit; when
        anything is cut, units are given back until the notice fits too, and the history
        never starts on an empty unit (dropped orphans). Repairs and orphans count the units
        the walk reached before ``end`` (the caller adds the pinned unit's).
        """
        i = self._count_back(budget, end, cost) if end else 0
        complete = i == 0
        reached = max(reached, end - i + (0 if complete else 1))
        if not complete:
            c = self._counted_from
            low = bisect.bisect_left(
                self._cost, self._cost[end - c] - (budget - notice_cost), i - c
            )
            i = min(c + low, end)
            units = self._units
            while i < end and not units[i].messages:
                i += 1
        at = self._at
        return HistoryFit(
            messages=self._flat[at[i] - at[0] : at[end] - at[0]],
            tokens=self._tokens(i, end) if i < end else 0,
            source=self._source[end] - self._source[i],
            sent=at[end] - at[i],
            repaired=self._repaired[end] - self._repaired[end - reached],
            orphans=self._orphans[end] - self._orphans[end - reached],
        )


def _continuation(old: list[Message], new: Sequence[Message]) -> tuple[int, int] | None:
    """How ``new`` continues ``old``: (messages dropped from ``old``'s front, messages the same).

    ``new`` continues ``old`` when its first message is one of ``old``'s; its first ``same``
    messages are then ``old``'s from there, the same objects, and what follows is new or
    changed (a message with attachments takes another form when its images age). None when
    it does not continue it. Messages compare by identity (``eq=False``), so ``index``,
    ``==`` and the search for the first change run in C without a Python call per message.
    """
    if not old or not new:
        return None
    try:
        dropped = old.index(new[0])
    except ValueError:
        return None
    kept = len(old) - dropped
    if kept <= len(new) and old[dropped:] == new[:kept]:
        return dropped, kept
    ends = min(kept, len(new))
    changed = compress(count(), map(operator.is_not, islice(old, dropped, None), new))
    return dropped, next(changed, ends)


def _messages_of(units: list[Unit]) -> list[Message]:
    return [m for unit in units for m in unit.messages]


def _starts_of(units: list[Unit], offset: int) -> list[int]:
    starts, at = [], offset
    for unit in units:
        starts.append(at)
        at += unit.source
    return starts
