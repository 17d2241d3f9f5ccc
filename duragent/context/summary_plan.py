"""When the summaries tier summarises and how much, counted as requests carry the history.

Issue 38 item 2 (``specs/202612051200.summary-cadence.md``): a summary is a model call that
reads the current summary and writes the next, and it came every other turn in tightly
capped chats and after nearly every turn in tool-heavy ones. Three rules set the cadence:

- **Count what a request carries.** Old tool outputs a request sends as pruning markers
  (``context.pruning``, when the agent prunes) count as their markers — the very
  ``prune_history`` ``render.fit_request`` applies; outputs are cut by Layer 3a when
  stored. Counted at full size they passed the trigger after almost every tool turn while
  the requests held a fraction of them. Layer 2 still chooses history by full size, so the
  tier also summarises when the history at full size passes ``full_share`` of its budget
  (0.85): a request does not leave out history that no summary holds, with room for the
  turn's own calls.
- **Hysteresis.** The trigger is ``threshold`` of the history budget; a summary leaves the
  history at the *low-water mark*, ``keep_recent`` of the budget it will have once the
  summary is in the block, latest message included (``keep_recent / threshold`` of the
  trigger: 0.29 below 8K, 0.43 to 32K, 0.36 from 32K, ``context.tiers``).
- **Nothing is summarised again for little.** While a request still carries the whole
  history, a round waits until it folds in at least ``FOLD_FACTOR`` times what the current
  summary costs: the call re-reads that summary and rewrites it, and folding in less mostly
  restates unchanged text (at 70 % of a 2,000-token cap, two 650-token turns under a
  summary as long). And the summariser reads the history as requests carried it: an output
  no request carried any more is not read again for the summary.

Pure functions over messages: the property tests drive them over generated histories.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from duragent.context.budget import BudgetSettings
from duragent.context.history_index import HistoryCache
from duragent.context.pruning import PrunePolicy, prune_history
from duragent.context.tokens import REQUEST_OVERHEAD_TOKENS, TokenCounter
from duragent.context.units import split, unit_cost
from duragent.core.messages import Message, Role

if TYPE_CHECKING:
    from duragent.context.summaries import SummarySettings

__all__ = [
    "FOLD_FACTOR",
    "SummaryPlan",
    "carried",
    "full_share",
    "history_budget",
    "plan_summary",
]

FOLD_FACTOR = 2
"""While a request still carries the whole history, a round waits until it folds in at
least this many times what the current summary costs: the call reads that summary and
writes the next one, about as long, so the new text is then at least the unchanged text
the call processes (module docstring)."""


def full_share(threshold: float) -> float:
    """How much of its budget the history may take at full size before a summary is due.

    Layer 2 chooses the history a request carries by full size, and a turn's own calls and
    results take their room from the history's; the trigger (``threshold``, counted as
    carried) leaves them ``1 − threshold`` of the budget. The history at full size may take
    half of that too, ``(1 + threshold) / 2`` (0.85 by default). Counted at full size
    alone (0.7) the tier summarised after nearly every tool turn; up to the whole budget
    (1.0), requests left history out mid-turn twice as often (47 against 22 of 733 calls
    over 200 tool-heavy turns at 32K) and carried so much more that table (c)'s 32K saving
    fell from −41.8 % to −40.7 % (``specs/202612051200.summary-cadence.md``).
    """
    return (1 + threshold) / 2


def history_budget(settings: BudgetSettings, fixed: int) -> int:
    """What Layer 2 may spend on history when the fixed part costs ``fixed`` tokens."""
    available = settings.limit - fixed - REQUEST_OVERHEAD_TOKENS
    if settings.max_history_tokens > 0:
        available = min(available, settings.max_history_tokens)
    return max(0, available)


def carried(
    history: Sequence[Message], prune: PrunePolicy | None, counter: TokenCounter
) -> list[Message]:
    """``history`` as a request carries it: old tool outputs as their pruning markers.

    The same ``prune_history`` ``render.fit_request`` applies to the history it sends, so the
    list has the same length and its unit boundaries are the history's.
    """
    messages = list(history)
    if prune is None:
        return messages
    return prune_history(messages, prune, counter).messages


@dataclass(frozen=True, slots=True)
class SummaryPlan:
    """The oldest ``count`` messages of the history are to be summarised."""

    count: int
    tokens_before: int
    """What the whole history (up to the latest user message) cost when planned, as carried."""
    tokens_summarised: int
    messages: tuple[Message, ...] = field(default=(), compare=False)
    """The ``count`` messages as a request carries them (pruned outputs as markers): what the
    summariser reads."""


def plan_summary(
    history: Sequence[Message],
    counter: TokenCounter,
    budget: int,
    settings: SummarySettings,
    *,
    force: bool = False,
    index: HistoryCache | None = None,
    growth: int = 0,
    prune: PrunePolicy | None = None,
    previous: int = 0,
) -> SummaryPlan | None:
    """What to summarise, or None while the history as carried is under the trigger.

    Sizes are what a request carries (``carried``; ``prune`` is the agent's pruning, None
    when it does not prune); the trigger is ``threshold × budget``, or the history at full
    size past ``full_share × budget`` (Layer 2 chooses by full size). Only messages before
    the latest user message are candidates, cut at a unit boundary (a call and its results
    stay together). What stays verbatim — the newest candidates *and* the latest user message
    with what follows it — is at most ``keep_recent`` of the budget the history will have
    once the summary is written (the low-water mark): ``budget − growth``, ``growth`` being
    what the reference block may grow by (the new summary is longer than the current one
    and sits in the fixed part). ``previous`` is what the current summary costs: while the
    history fits, a round folding in less than ``FOLD_FACTOR × previous`` waits (module
    docstring). ``force`` (the provider said "too long") plans even under the trigger,
    whatever the round folds in, and keeps at most ``keep_recent`` of the history as it
    is. None also when there is nothing old enough to summarise.

    ``index`` is the session's ``HistoryCache`` (the one ``fit_request`` gets): the question
    asked before every turn, "is the history over the trigger?", is then answered from its
    running sums while the history at full size is under it (a request never carries
    more). Same answer either way.
    """
    limit = settings.threshold * budget
    if not force:  # the common case, cheaply: counts are cached per message, sums by index
        rough = (
            index.message_tokens(history, counter)
            if index is not None
            else counter.sum_messages(history)
        )
        if rough <= limit * 0.9:
            return None
        if index is not None and _under(history, counter, limit, index):
            return None
    shown = carried(history, prune, counter)
    replaced = {id(h): c for h, c in zip(history, shown, strict=True) if h is not c}
    last_user = next(
        (i for i in range(len(history) - 1, -1, -1) if history[i].role is Role.USER), None
    )
    candidates = history[:last_user] if last_user is not None else history
    units = split(candidates)
    count_message = counter.count_message
    full = [sum(map(count_message, u.messages)) for u in units]
    costs = [sum(count_message(replaced.get(id(m), m)) for m in u.messages) for u in units]
    rest = shown[len(candidates) :]
    tail = sum(map(count_message, rest))
    total = sum(costs) + tail
    # Layer 2 chooses history by full size: past ``full_share`` it may leave some out
    fits = (
        sum(full) + counter.sum_messages(history[len(candidates) :])
        <= full_share(settings.threshold) * budget
    )
    if not force and total <= limit and fits:
        return None
    keep_room = settings.keep_recent * max(0, budget - growth)
    if force:  # the provider counts more than we do: keep a share of what there is
        keep_room = min(keep_room, settings.keep_recent * total)
    keep_room -= tail  # the latest message stays whatever it costs: it is part of the share
    kept = 0
    cut = len(units)
    while cut > 0 and kept + costs[cut - 1] <= keep_room:
        kept += costs[cut - 1]
        cut -= 1
    summarised = units[:cut]
    while summarised and not summarised[-1].messages:
        summarised.pop()  # never end on dropped orphans: the cut lands on a real message
    count = sum(u.source for u in summarised)
    folded = sum(costs[: len(summarised)])
    if count == 0:
        return None
    if not force and fits and folded < FOLD_FACTOR * previous:
        return None  # it can wait: the request still carries it all (module docstring)
    return SummaryPlan(count, total, folded, tuple(shown[:count]))


def _under(
    history: Sequence[Message], counter: TokenCounter, limit: float, index: HistoryCache
) -> bool:
    """Whether the history at full size is at most ``limit``, from ``index``'s running sums.

    The total ``plan_summary`` computes when nothing is pruned: the units before the latest
    user message, then the rest message by message. False when unsure (no user message; no
    unit starts there).
    """
    index.units(history, counter, functools.partial(unit_cost, counter=counter))
    last_user = next(
        (i for i in range(len(history) - 1, -1, -1) if history[i].role is Role.USER), None
    )
    if last_user is None:
        return False
    before = index.cost_before(last_user, functools.partial(unit_cost, counter=counter))
    if before is None:
        return False
    total = before + counter.sum_messages(history[last_user:])
    return total <= limit
