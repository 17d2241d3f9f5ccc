"""When the summaries tier summarises and how much, counted as requests carry the history.

Issue 38 item 2 (``specs/202612051200.summary-cadence.md``): a summary is a model call that
reads the current summary and writes the next, and it came every other turn in tightly
capped chats and after nearly every turn in tool-heavy ones. Four rules set the cadence:

- **Count what a request carries.** Old tool outputs a request sends as pruning markers
  (``context.pruning``, when the agent prunes) count as their markers — the very
  ``prune_history`` ``render.fit_request`` applies before Layer 2 fills the history by
  these sizes; outputs are cut by Layer 3a when stored. So the history this plan sizes is
  exactly what requests carry: under the trigger a request leaves none of it out.
- **Hysteresis.** A summary leaves the history at the *low-water mark*, ``keep_recent`` of
  the budget it will have once the summary is in the block, latest message included; the
  next is due when the history passes the trigger (``context.tiers``: 70 % of the history
  budget, keep 20–30 %).
- **A turn that calls the model c times carries the history c times.** The tier's
  ``threshold`` is the trigger of a chat (one call a turn). Every call of a turn sends the
  history, while a summary is paid once: between summaries the history grows from the
  low-water mark ``K`` by ``g`` tokens a turn, so over ``G`` turns the calls carry ``c·(K +
  G·g/2)`` a turn and the summaries cost ``(G·g + 2·S)/G`` a turn (what it folds in, plus
  reading and writing a summary of ``S``): least in all at ``G ∝ 1/√c``. The trigger of a
  history whose turns make ``c`` calls on average is therefore ``K + (threshold − K)/√c``
  (``trigger_share``): a chat's is the threshold, a tool-heavy chat of 3–4 calls a turn
  summarises at about half of its budget. Counted at full size instead, the old outputs
  passed the trigger after almost every tool turn; counted as carried at the chat's
  threshold, tool-heavy requests carried half again as much history (table (c) +8 % and
  +25 % tokens at 8K and 32K).
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
import math
import operator
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
    "calls_per_turn",
    "carried",
    "history_budget",
    "plan_summary",
    "trigger_share",
    "wait_share",
]

FOLD_FACTOR = 2
"""While a request still carries the whole history, a round waits until it folds in at
least this many times what the current summary costs: the call reads that summary and
writes the next one, about as long, so the new text is then at least the unchanged text
the call processes (module docstring)."""


_ROLE = operator.attrgetter("role")


def wait_share(threshold: float) -> float:
    """How much of its budget the history may take, as carried, while a small round waits.

    A turn's own calls and results take their room from the history's, so the fold rule
    (``FOLD_FACTOR``) lets a round wait only while the history leaves the turn half of what
    the threshold leaves it: ``(1 + threshold) / 2`` (0.85 by default). Beyond it a round is
    written however little it folds in, so a request mid-turn does not leave history out
    for want of a summary.
    """
    return (1 + threshold) / 2


def calls_per_turn(history: Sequence[Message]) -> float:
    """Model calls per turn in ``history``: its assistant messages per user message, ≥ 1.

    Each assistant message is one model call (a tool-calling step or an answer), each user
    message starts a turn; a chat is 1, a turn of three tool iterations 4. Role checks
    only, no calls: it is asked before every turn.
    """
    roles = list(map(_ROLE, history))  # counted in C: it grows with the history
    users, calls = roles.count(Role.USER), roles.count(Role.ASSISTANT)
    return max(1.0, calls / max(1, users))


def trigger_share(settings: SummarySettings, calls: float = 1.0) -> float:
    """The share of the history budget past which a summary is due (module docstring).

    ``threshold`` for a chat (``calls`` = 1); for ``calls`` model calls a turn, the
    distance above the low-water mark (``keep_recent``) shrinks by ``√calls``.
    """
    keep, threshold = settings.keep_recent, settings.threshold
    if calls <= 1 or keep >= threshold:
        return threshold
    return keep + (threshold - keep) / math.sqrt(calls)


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
    when it does not prune, the very sizes Layer 2 fills by); the trigger is
    ``trigger_share`` of ``budget``: the threshold, nearer the low-water mark when the
    history's turns make several model calls. Only messages before the latest user message
    are candidates, cut at a unit boundary (a call and its results stay together). What
    stays verbatim — the newest candidates *and* the latest user message with what follows
    it — is at most ``keep_recent`` of the budget the history will have once the summary is
    written (the low-water mark): ``budget − growth``, ``growth`` being what the reference
    block may grow by (the new summary is longer than the current one and sits in the
    fixed part). ``previous`` is what the current summary costs: while the history is within
    ``wait_share`` of its budget, a round folding in less than ``FOLD_FACTOR × previous``
    waits (module docstring). ``force`` (the provider said "too long") plans even under the
    trigger, whatever the round folds in, and keeps at most ``keep_recent`` of the history
    as it is. None also when there is nothing old enough to summarise.

    ``index`` is the session's ``HistoryCache`` (the one ``fit_request`` gets, and given the
    same carried messages): the question asked before every turn, "is the history over the
    trigger?", is then answered from its running sums. Same answer either way.
    """
    limit = trigger_share(settings, calls_per_turn(history)) * budget
    if not force:  # the common case, cheaply: counts are cached per message, sums by index
        rough = (
            index.message_tokens(history, counter)
            if index is not None
            else counter.sum_messages(history)
        )
        if rough <= limit * 0.9:  # a request never carries more than the full size
            return None
    shown = carried(history, prune, counter)
    if not force and index is not None and _under(shown, counter, limit, index):
        return None
    last_user = next((i for i in range(len(shown) - 1, -1, -1) if shown[i].role is Role.USER), None)
    candidates = shown[:last_user] if last_user is not None else shown
    units = split(candidates)
    costs = [counter.sum_messages(u.messages) for u in units]
    tail = counter.sum_messages(shown[len(candidates) :])
    total = sum(costs) + tail
    if not force and total <= limit:
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
    fits = total <= wait_share(settings.threshold) * budget
    if not force and fits and folded < FOLD_FACTOR * previous:
        return None  # it can wait: the request still carries it all (module docstring)
    return SummaryPlan(count, total, folded, tuple(shown[:count]))


def _under(
    history: Sequence[Message], counter: TokenCounter, limit: float, index: HistoryCache
) -> bool:
    """Whether ``history`` (as carried) costs at most ``limit``, from ``index``'s sums.

    The total ``plan_summary`` computes: the units before the latest user message, then the
    rest message by message. ``fit_request`` hands the index the same carried messages, so
    its sums carry over from request to request. False when unsure (no user message; no
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
