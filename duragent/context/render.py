"""Fit one LLM request into the window: Layer 2 (history) and Layer 3b/3c (this turn's tools).

``fit_request`` is called before *every* LLM call, from every front end, through the turn
runner. It returns the messages to send and a ``BudgetReport``. Order of measures, least
destructive first:

1. Normalise: each assistant tool call is followed by exactly its results (a missing result
   is repaired with a synthetic error result; orphan and duplicate results are dropped).
2. Pin the latest user message (always kept).
3. Layer 3b: in this turn, only the first ``keep_first`` and last ``keep_last`` tool results
   stay visible; the middle ones read ``[result masked — ~N tokens removed]``.
4. While this turn does not fit beside the fixed part, the pinned message and the truncation
   notice (``turn_fit``): masking widens (oldest first, every result but the latest
   iteration's), the latest results shrink to a floor, and only then Layer 3c leaves out the
   oldest whole iterations (call + results; never the latest, never a user message) with a
   notice saying how many calls are not shown. Still over: the latest results shrink
   further. Still over: ``ContextOverflowError`` — never an overflowing request.
Before all of them, the quoted blocks — the summaries tier's *reference block* (pinned
sections and the current summary, ``context.summaries``) and a turn's ``context`` (a group's
recent chatter) — are counted in the fixed part, like the prompt: no layer ever drops them.
People, tools and models wrote them, so they are user-role messages (``context.quoting``):
the reference block first after the system messages, the context right before the latest
user message (or first, when Layer 2 pinned none), and the system prompt then ends with
``RUNTIME_NOTE`` saying they are data (``specs/202612050100.authority-follows-the-author.md``).

5. Pruning (when the settings say so): in the history, tool outputs older than a protected
   recent span become one-line markers (``pruning``). It runs on the whole history, a pure
   function of its messages (the markers are made once per output and reused), so cached
   and uncached renders agree and the session's history cache sees the same messages from
   request to request until a step of pruning replaces some.
6. Layer 2: history newest → oldest into what the turn left, within ``max_history_tokens``.
   While the whole history fits as carried (old outputs as their markers) it is all sent:
   the summaries tier counts the same carried sizes (``context.summary_plan``), so a history
   under its trigger is never cut. When some must go, the units are chosen by full size, as
   before pruning existed, and sent as carried: the room pruning frees is not refilled with
   older conversation (``pruning``). Never start on an orphaned result; a ``[conversation
   truncated — N older messages omitted]`` system message (right after the system prompt)
   when anything was left out. History is fitted *after* 3c so a dropped group's room goes
   to history (seed 002: 3c always preserves history); the walk is greedy, so nothing is
   omitted while the free room is at least the next omitted unit's cost (by the size the
   walk chose by). What is counted is what is sent.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

from duragent.context.budget import BudgetReport, BudgetSettings, ContextOverflowError
from duragent.context.history_index import HistoryCache, HistoryFit
from duragent.context.pruning import Pruned, prune_history
from duragent.context.quoting import with_note
from duragent.context.tokens import REQUEST_OVERHEAD_TOKENS, TokenCounter
from duragent.context.turn_fit import fit_turn, masked_notice
from duragent.context.units import (
    MISSING_RESULT,
    TurnCache,
    Unit,
    split,
    split_newest_first,
    unit_cost,
)
from duragent.core.messages import Message, Role, ToolDefinition

__all__ = [
    "MISSING_RESULT",
    "HistoryCache",
    "TurnCache",
    "fit_request",
    "masked_notice",
    "truncation_notice",
]


def truncation_notice(omitted: int) -> str:
    """The notice placed after the system prompt when history was left out."""
    return f"[conversation truncated — {omitted} older messages omitted]"


@functools.lru_cache(maxsize=256)
def _system_message(text: str) -> Message:
    """One message object per system prompt: its count and wire form are then cached too."""
    return Message.system(text)


@functools.lru_cache(maxsize=256)
def _user_message(text: str) -> Message:
    """One message object per quoted block, as ``_system_message``.

    The block is the same from call to call of a turn, and from turn to turn until a pin or
    a summary changes it.
    """
    return Message.user(text)


def _reported(units: Iterator[Unit], report: BudgetReport) -> Iterator[Unit]:
    """``units``, each counted in ``report`` as the walk reaches it."""
    for unit in units:
        unit.report_to(report)
        yield unit


_cost = unit_cost


def fit_request(
    *,
    system: str,
    history: Sequence[Message],
    turn: Sequence[Message] = (),
    tools: Sequence[ToolDefinition] = (),
    counter: TokenCounter,
    settings: BudgetSettings,
    turn_cache: TurnCache | None = None,
    history_cache: HistoryCache | None = None,
    tools_tokens: int | None = None,
    reference: str = "",
    context: str = "",
) -> tuple[list[Message], BudgetReport]:
    """The messages to send for this call, fitted to ``settings.limit`` (module docstring).

    Pass the same ``turn_cache`` for every call of one turn and the session's
    ``history_cache`` for every call (the loop does) to keep the cost of a call proportional
    to what changed, and ``tools_tokens`` when the tool definitions' cost is already known.
    ``reference`` is the summaries tier's block, ``context`` this turn's quoted context (a
    group's chatter): both already quoted (``context.quoting``), both sent as user messages.
    """
    report = BudgetReport(window=settings.window, limit=settings.limit)
    limit = settings.limit
    reference_msg = _user_message(reference) if reference.strip() else None
    context_msg = _user_message(context) if context.strip() else None
    if reference_msg is not None or context_msg is not None:
        system = with_note(system)  # the runtime says, with system authority, they are data
    system_msg = _system_message(system) if system.strip() else None
    if tools_tokens is None:
        tools_tokens = counter.count_tools(tools)
    fixed = REQUEST_OVERHEAD_TOKENS + tools_tokens
    for block in (system_msg, reference_msg, context_msg):
        if block is not None:
            fixed += counter.count_message(block)

    # --- this turn: normalise (3b masking follows, in ``fit_turn``) ------------------------
    if turn_cache is not None:
        turn_units = turn_cache.update(turn, report)
    else:
        turn_units = split(turn)
        for unit in turn_units:
            unit.report_to(report)

    # --- pruning first: old outputs as the markers a request carries (``pruning``) --------
    carried = history if isinstance(history, list) else list(history)
    pruned: Pruned | None = None
    if settings.prune is not None:
        pruned = prune_history(carried, settings.prune, counter)
        carried = pruned.messages

    # --- the latest user message is pinned; the least history can cost -------------------
    hist: _History = (
        _IndexedHistory(history_cache, carried, counter)
        if history_cache is not None
        else _PlainHistory(carried, counter)
    )
    pinned = hist.pinned
    pinned_cost = sum(u.tokens or _cost(u, counter) for u in pinned)
    hist_total = len(history) - sum(u.source for u in pinned)
    notice_cost = counter.count_message(Message.system(truncation_notice(len(history))))
    # History may have to go entirely; the least it costs is then its notice, or the whole
    # rest of it when that is cheaper than the notice (a few tiny messages).
    floor = fixed + pinned_cost + (hist.floor(notice_cost) if hist_total else 0)

    # --- 3b widening, then 3c: this turn alone against what is left (``turn_fit``) -------
    fit = fit_turn(
        turn_units,
        limit - floor,
        keep_first=settings.keep_first,
        keep_last=settings.keep_last,
        limit=limit,
        counter=counter,
        report=report,
    )
    turn_units, turn_cost = fit.units, fit.tokens + fit.notice_tokens
    if floor + turn_cost > limit:
        raise ContextOverflowError(floor + turn_cost, limit)

    # --- Layer 2: history, newest first, into what is left ----------------------------------
    available = limit - fixed
    budget = (
        available
        if settings.max_history_tokens <= 0
        else min(available, settings.max_history_tokens)
    )
    budget = min(budget, limit - fixed - turn_cost) - pinned_cost
    chosen = hist.fill(budget, notice_cost)
    if pruned is not None and pruned.count:
        if chosen.source < hist_total:  # some must go: chosen by full size (``pruning``)
            chosen = _by_full_size(history, pruned, budget, notice_cost, counter)
        report.results_pruned = _count_in(chosen.messages, pruned.markers)
    report.calls_repaired += chosen.repaired
    report.orphans_dropped += chosen.orphans
    omitted = hist_total - chosen.source
    # The notice was budgeted for the most messages it could name; it names ``omitted``,
    # which may be written with fewer digits (fewer tokens): report what is sent.
    notice = Message.system(truncation_notice(omitted)) if omitted else None
    notice_sent = counter.count_message(notice) if notice is not None else 0
    needed = (
        fixed + notice_sent + chosen.tokens + pinned_cost + turn_cost
    )  # calls notice in turn_cost

    # --- assemble ----------------------------------------------------------------------------
    # the runtime's system messages first, then what people, tools and models wrote
    out: list[Message] = []
    if system_msg is not None:
        out.append(system_msg)
    if notice is not None:
        out.append(notice)
    if fit.notice is not None:
        out.append(fit.notice)  # this turn's calls left out (``turn_fit``)
    if reference_msg is not None:
        out.append(reference_msg)
    if context_msg is not None and not pinned:
        out.append(context_msg)
    out.extend(chosen.messages)
    if context_msg is not None and pinned:
        out.append(context_msg)  # right before the message it came with
    for unit in (*pinned, *turn_units):
        out.extend(unit.messages)
    report.history_omitted = omitted
    report.history_sent = chosen.sent + sum(len(u.messages) for u in pinned)
    report.request_tokens = needed
    return out, report


def _by_full_size(
    history: Sequence[Message], pruned: Pruned, budget: int, notice_cost: int, counter: TokenCounter
) -> HistoryFit:
    """Layer 2's choice by full size, then sent as carried (old outputs as their markers).

    When history must be left out anyway, filling the room pruning frees with older
    conversation would cost tokens pruning is there to save (``pruning``); so the units are
    the ones a full-size fill chooses, each old output then replaced by the marker the whole
    history's pruning gave it, and the cost counted again as sent. A plain walk (its cost is
    what it reaches, about what is sent): the session's cache holds the carried messages.
    """
    chosen = _PlainHistory(history, counter).fill(budget, notice_cost)
    replaced = pruned.replaced
    messages: list[Message] = []
    tokens = chosen.tokens
    for message in chosen.messages:
        marker = replaced.get(id(message))
        if marker is None:
            messages.append(message)
        else:
            messages.append(marker)
            tokens -= counter.count_message(message) - counter.count_message(marker)
    chosen.messages, chosen.tokens = messages, tokens
    return chosen


def _count_in(messages: list[Message], ids: frozenset[int]) -> int:
    """How many of ``messages`` are among ``ids`` (by identity)."""
    count = 0
    for message in messages:
        if id(message) in ids:
            count += 1
    return count


class _History(Protocol):
    """Layer 2's view of the history: what is pinned, the least it costs, what fits."""

    pinned: list[Unit]

    def floor(self, notice_cost: int) -> int:
        """The least the unpinned history costs: its notice, or all of it when cheaper."""

    def fill(self, budget: int, notice_cost: int) -> HistoryFit:
        """The newest units that fit ``budget``, with room for the notice when cut.

        Its repairs and orphans count every unit the walk reached, the pinned one included.
        """


class _IndexedHistory:
    """The session's ``HistoryCache``: every question in time independent of the length."""

    def __init__(self, cache: HistoryCache, history: Sequence[Message], counter: TokenCounter):
        self._cache = cache
        self._cost: Callable[[Unit], int] = functools.partial(_cost, counter=counter)
        units = cache.units(history, counter, self._cost)
        pin = cache.pinned()
        self.pinned = [pin] if pin is not None else []
        self._end = len(units) - len(self.pinned)
        self._reached = 0

    def floor(self, notice_cost: int) -> int:
        least, self._reached = self._cache.floor(notice_cost, self._end, self._cost)
        return least

    def fill(self, budget: int, notice_cost: int) -> HistoryFit:
        chosen = self._cache.fit(budget, notice_cost, self._end, self._reached, self._cost)
        for unit in self.pinned:  # reached first, as in the plain walk
            chosen.repaired += unit.repaired
            chosen.orphans += unit.orphans
        return chosen


class _PlainHistory:
    """A walk over the history newest first, splitting and counting as it goes.

    Used without a cache; the reference the indexed view is tested against.
    """

    def __init__(self, history: Sequence[Message], counter: TokenCounter) -> None:
        self._counter = counter
        self._report = BudgetReport()  # repairs and orphans of the units reached
        candidates = _reported(split_newest_first(history), self._report)
        head = next(candidates, None)
        self.pinned: list[Unit] = []
        if head is not None and head.messages and head.messages[0].role is Role.USER:
            self.pinned = [head]
        elif head is not None:
            candidates = itertools.chain([head], candidates)
        self._candidates = candidates

    def floor(self, notice_cost: int) -> int:
        peeked: list[Unit] = []
        least = 0
        for unit in self._candidates:
            peeked.append(unit)
            least += unit.tokens or _cost(unit, self._counter)
            if least >= notice_cost:
                least = notice_cost
                break
        self._candidates = itertools.chain(peeked, self._candidates)
        return least

    def fill(self, budget: int, notice_cost: int) -> HistoryFit:
        """The newest units that fit ``budget``, greedily.

        It stops at the first unit that does not fit, so the free room left is always less
        than the cost of the newest omitted unit (the property tests check this).
        """
        chosen: list[Unit] = []  # newest first while selecting
        used = 0
        complete = True
        for unit in self._candidates:
            cost = unit.tokens or _cost(unit, self._counter)
            if used + cost > budget:
                complete = False
                break
            chosen.append(unit)
            used += cost
        if not complete:
            while chosen and used + notice_cost > budget:
                used -= chosen.pop().tokens
        chosen.reverse()
        # Never start on an orphaned result (an empty unit stands for dropped orphans; when
        # the whole history fits they are simply not sent, with no notice).
        while not complete and chosen and not chosen[0].messages:
            used -= chosen.pop(0).tokens
        return HistoryFit(
            messages=[m for unit in chosen for m in unit.messages],
            tokens=used,
            source=sum(u.source for u in chosen),
            sent=sum(len(u.messages) for u in chosen),
            repaired=self._report.calls_repaired,
            orphans=self._report.orphans_dropped,
        )
