"""Layer 3b and 3c: this turn's tool iterations fitted so the model still sees every call it made.

A model that cannot see a call it made makes it again. Issue 38 item 1: an 8K agent asked for
30 calls saw only its last two from the third call on — 3b never masked (7 results are kept
by default, and two capped results already filled the window), 3c dropped whole iterations,
and nothing said so. So a turn now gives up detail before it gives up calls, least
destructive first (``specs/202612051200.calls-always-visible.md``):

1. 3b as configured: the first ``keep_first`` and last ``keep_last`` results stay, the middle
   ones read ``[result masked — ~N tokens removed…]`` (0/0 turns this step off).
2. Masking widens: while the turn does not fit, one more result is masked, oldest first;
   every result but the latest iteration's can be masked this way, at every window tier.
3. The latest iteration's results may shrink (one 3a indicator, the original size kept) down
   to ``LATEST_FLOOR_SHARE`` of the request limit.
4. 3c, only when every call — older results masked, the latest at that floor — cannot fit:
   the oldest whole iterations go and one runtime notice (``notices.calls_left_out_notice``)
   says exactly how many calls and iterations are not shown and that their records are on
   disk. Its cost is reserved before the first iteration goes. When even leaving out every
   older iteration cannot keep the floor, the floor gives way instead: only the iterations
   that do not fit beside the latest results shrunk to their "removed" notices go.
5. Still over: the latest results shrink below the floor, as far as the "removed" notice; the
   caller raises ``ContextOverflowError`` if even that is not enough (the fewer tokens of
   the two — every call, or the notice instead of the older ones — is what it reports).

Masks are written into the units: with a ``TurnCache`` they stay for the rest of the turn (a
turn only grows, so a result that had to be masked still has to be, and earlier messages stay
the same from call to call). Drops and shrinks are decided per request, the shrink on a copy,
so the notice's count is always this request's and the cache keeps every unit.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from duragent.context.budget import BudgetReport
from duragent.context.notices import (
    Cut,
    calls_left_out_notice,
    compose,
    read_cut,
    removed_notice,
    saved_suffix,
)
from duragent.context.tokens import TokenCounter
from duragent.context.truncation import fit_prefix, fit_suffix
from duragent.context.units import Unit, unit_cost
from duragent.core.messages import Message

__all__ = ["LATEST_FLOOR_SHARE", "TurnFit", "fit_turn", "masked_notice"]

LATEST_FLOOR_SHARE = 0.10
"""Share of the request limit the latest iteration's results keep before an older call goes:
the model must read what its last call returned, but not at the price of forgetting calls."""

_masked: weakref.WeakKeyDictionary[Message, Message] = weakref.WeakKeyDictionary()


def masked_notice(tokens: int, saved: str | None = None) -> str:
    """What a masked tool result reads (naming the saved full output, if there is one)."""
    return f"[result masked — ~{tokens} tokens removed{saved_suffix(saved)}]"


def _mask(message: Message, counter: TokenCounter) -> Message:
    cached = _masked.get(message)
    if cached is None:
        cut = read_cut(message.text)  # a 3a-cut result: say its size before any cut
        removed = cut.original if cut is not None else counter.count_message(message)
        saved = cut.saved if cut is not None else None
        cached = Message.tool(message.tool_call_id or "", masked_notice(removed, saved))
        _masked[message] = cached
    return cached


def _mask_slot(unit: Unit, k: int, counter: TokenCounter) -> bool:
    """Mask result ``k`` of ``unit`` unless its mask would cost more; whether it changed."""
    if k in unit.masked:
        return False
    result = unit.messages[k]
    masked = _mask(result, counter)
    if counter.count_message(masked) >= counter.count_message(result):
        return False  # a result shorter than its mask is kept: it costs less
    unit.messages[k] = masked
    unit.masked.add(k)
    return True


@dataclass(slots=True)
class TurnFit:
    """What this request carries of the turn."""

    units: list[Unit]
    tokens: int  # the units' cost
    notice: Message | None = None  # the runtime's notice of calls left out, if any
    notice_tokens: int = 0


def _calls(unit: Unit) -> int:
    return len(unit.messages[0].tool_calls)


def fit_turn(
    units: list[Unit],
    room: int,
    *,
    keep_first: int,
    keep_last: int,
    limit: int,
    counter: TokenCounter,
    report: BudgetReport,
) -> TurnFit:
    """This turn's units fitted into ``room`` tokens as far as they can be (module docstring).

    ``units`` (the ``TurnCache``'s list when there is one) is never reordered or shortened;
    masks are written into its units. The result may still exceed ``room`` when even the
    latest iteration alone cannot fit; the caller decides what that means.
    """
    groups = [u for u in units if u.group]
    slots = [(u, k) for u in groups for k in u.results]
    if (keep_first or keep_last) and len(slots) > keep_first + keep_last:
        for unit, k in slots[keep_first : len(slots) - keep_last]:
            if _mask_slot(unit, k, counter):
                unit_cost(unit, counter)
    cost = sum(u.tokens or unit_cost(u, counter) for u in units)
    fit = TurnFit(units, cost)
    if cost > room and groups:
        cost = _widen(groups[:-1], cost, room, counter)
        fit.tokens = cost
    if cost > room and groups:
        _drop_then_shrink(fit, groups, room, limit, counter, report)
    report.results_masked += sum(len(u.masked) for u in fit.units)
    return fit


def _widen(older: list[Unit], cost: int, room: int, counter: TokenCounter) -> int:
    """Mask older results, oldest first, until the turn fits ``room``; the new cost."""
    for unit in older:
        for k in unit.results:
            if cost <= room:
                return cost
            if _mask_slot(unit, k, counter):
                before = unit.tokens
                cost += unit_cost(unit, counter) - before
    return cost


def _least(message: Message, counter: TokenCounter) -> int:
    """The least a result can be shrunk to: the "removed" notice, or itself when smaller."""
    cut = read_cut(message.text)
    original = cut.original if cut is not None else counter.count_text(message.text)
    removed = removed_notice(original, cut.saved if cut is not None else None)
    least = counter.count_message(Message.tool(message.tool_call_id or "", removed))
    return min(least, counter.count_message(message))


def _leave_out(older: list[Unit], cost: int, slack: int, room: int, notice: int) -> int | None:
    """How many of the oldest iterations must go for the rest to fit, the notice counted.

    0 when nothing needs to go; None when even leaving out all of them is not enough.
    """
    if cost - slack <= room:
        return 0
    room -= notice
    for count, unit in enumerate(older, 1):
        cost -= unit.tokens
        if cost - slack <= room:
            return count
    return None


def _drop_then_shrink(
    fit: TurnFit,
    groups: list[Unit],
    room: int,
    limit: int,
    counter: TokenCounter,
    report: BudgetReport,
) -> None:
    """Steps 3–5: the latest results shrink to their floor, then iterations go, then below."""
    latest, older = groups[-1], groups[:-1]
    results = sum(counter.count_message(latest.messages[k]) for k in latest.results)
    least = sum(_least(latest.messages[k], counter) for k in latest.results)
    floor = max(least, min(results, int(limit * LATEST_FLOOR_SHARE)))
    cost = fit.tokens
    # Reserved for the most it could name; the notice sent names fewer, never costs more.
    most = Message.system(calls_left_out_notice(sum(map(_calls, older)), len(older)))
    reserve = counter.count_message(most)
    count = _leave_out(older, cost, results - floor, room, reserve)
    if count is None:  # the floor cannot be kept even without them: calls come first again
        count = _leave_out(older, cost, results - least, room, reserve)
    if count is None:  # nothing fits: send the cheaper of the two (the caller refuses it)
        count = len(older) if sum(u.tokens for u in older) > reserve else 0
    if count:
        gone = older[:count]
        left_out = sum(map(_calls, gone))
        fit.notice = Message.system(calls_left_out_notice(left_out, count))
        fit.notice_tokens = counter.count_message(fit.notice)
        cost -= sum(u.tokens for u in gone)
        dropped = {id(u) for u in gone}
        fit.units = [u for u in fit.units if id(u) not in dropped]
        report.groups_dropped += count
        report.calls_left_out += left_out
    if cost > room - fit.notice_tokens:
        copy = Unit(
            list(latest.messages),
            source=latest.source,
            group=True,
            tokens=latest.tokens,
            results=list(latest.results),
            masked=set(latest.masked),
        )
        _shrink_results([copy], cost - (room - fit.notice_tokens), counter, report)
        cost += copy.tokens - latest.tokens
        fit.units = [copy if u is latest else u for u in fit.units]
    fit.tokens = cost


def _shrink_results(
    units: list[Unit], excess: int, counter: TokenCounter, report: BudgetReport
) -> None:
    """Cut these units' tool results (largest first) until ``excess`` tokens are gone.

    A result 3a already cut is cut again from what 3a kept, with its strategy, and keeps one
    indicator naming its original size (``notices``); any other result is cut from the head.
    """
    slots = [(u, k) for u in units if u.group for k in u.results]
    slots.sort(key=lambda s: counter.count_message(s[0].messages[s[1]]), reverse=True)
    for unit, k in slots:
        for _ in range(3):  # token counts are not additive; re-check after each cut
            if excess <= 0:
                return
            message = unit.messages[k]
            current = counter.count_text(message.text)
            text = _recut(message.text, current - excess, counter)
            if counter.count_text(text) >= current:
                break
            before = unit.tokens
            unit.messages[k] = Message.tool(message.tool_call_id or "", text)
            excess -= before - unit_cost(unit, counter)
            report.results_shrunk += 1


def _recut(text: str, target: int, counter: TokenCounter) -> str:
    """``text`` cut to about ``target`` tokens, its single indicator naming the original size."""
    cut = read_cut(text) or Cut(text, "", counter.count_text(text), "head")
    head, tail, original, strategy = cut.head, cut.tail, cut.original, cut.strategy
    # the indicator and its separators
    probe = compose(strategy, "", "", original, original, cut.saved)
    room = target - counter.count_text(probe) - 2
    if room <= 0:
        return removed_notice(original, cut.saved)
    new_head = new_tail = ""
    if strategy == "head":
        new_head = fit_prefix(head, room, counter)
    elif strategy == "tail":
        new_tail = fit_suffix(tail, room, counter)
    else:
        new_head = fit_prefix(head, room // 2, counter)
        new_tail = fit_suffix(tail, room - room // 2, counter)
    kept = counter.count_text(new_head) + counter.count_text(new_tail)
    return compose(strategy, new_head, new_tail, kept, original, cut.saved)
