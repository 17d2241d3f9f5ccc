"""Fit one LLM request into the window: Layer 2 (history) and Layer 3b/3c (this turn's tools).

``fit_request`` is called before *every* LLM call, from every front end, through the turn
runner. It returns the messages to send and a ``BudgetReport``. Order of measures, least
destructive first:

1. Normalise: each assistant tool call is followed by exactly its results (a missing result
   is repaired with a synthetic error result; orphan and duplicate results are dropped).
2. Layer 2: history newest → oldest within ``min(available, max_history_tokens)``; never start
   on an orphaned result; a ``[conversation truncated — N older messages omitted]`` system
   message when anything was left out. The latest user message is always kept.
3. Layer 3b: in this turn, only the first ``keep_first`` and last ``keep_last`` tool results
   stay visible; the middle ones read ``[result masked — ~N tokens removed]``.
4. Layer 3c: while over the limit, drop this turn's oldest whole iteration groups (call +
   results), never the latest group and never a user message.
5. Still over: drop more history (oldest first), then mask every result but the latest
   group's, then shrink the latest group's results evenly.
6. Still over: ``ContextOverflowError`` — never an overflowing request.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

from duragent.context.budget import BudgetReport, BudgetSettings, ContextOverflowError
from duragent.context.tokens import REQUEST_OVERHEAD_TOKENS, TokenCounter
from duragent.context.truncation import fit_prefix
from duragent.core.messages import Message, Role, ToolDefinition

__all__ = ["MISSING_RESULT", "fit_request", "masked_notice", "truncation_notice"]

MISSING_RESULT = "Error: no result was recorded for this tool call"

_masked: weakref.WeakKeyDictionary[Message, Message] = weakref.WeakKeyDictionary()


def truncation_notice(omitted: int) -> str:
    """The notice placed after the system prompt when history was left out."""
    return f"[conversation truncated — {omitted} older messages omitted]"


def masked_notice(tokens: int) -> str:
    """What a masked tool result reads."""
    return f"[result masked — ~{tokens} tokens removed]"


@dataclass(slots=True)
class _Unit:
    """Messages that travel together: one message, or a tool call with all its results."""

    messages: list[Message]
    source: int = 1  # how many original messages it stands for (for the omitted count)
    group: bool = False
    tokens: int = 0
    pinned: bool = False
    results: list[int] = field(default_factory=list)  # indexes of tool results in messages


def _group(call: Message, results: list[Message], report: BudgetReport) -> _Unit:
    by_id: dict[str, Message] = {}
    for r in results:
        if r.tool_call_id and r.tool_call_id not in by_id:
            by_id[r.tool_call_id] = r
    out = [call]
    used = 0
    for call_id in dict.fromkeys(c.id for c in call.tool_calls):
        found = by_id.get(call_id)
        if found is None:
            report.calls_repaired += 1
            found = Message.tool(call_id, MISSING_RESULT)
        else:
            used += 1
        out.append(found)
    report.orphans_dropped += len(results) - used
    return _Unit(out, source=1 + len(results), group=True, results=list(range(1, len(out))))


def _units(messages: Sequence[Message], report: BudgetReport) -> list[_Unit]:
    """Split into units, oldest first (normalising tool calls and results)."""
    units: list[_Unit] = []
    i = len(messages) - 1
    while i >= 0:
        m = messages[i]
        if m.role is Role.TOOL:
            j = i
            while j >= 0 and messages[j].role is Role.TOOL:
                j -= 1
            results = list(messages[j + 1 : i + 1])
            if j >= 0 and messages[j].role is Role.ASSISTANT and messages[j].tool_calls:
                units.append(_group(messages[j], results, report))
                i = j - 1
            else:
                report.orphans_dropped += len(results)
                units.append(_Unit([], source=len(results)))
                i = j
        elif m.role is Role.ASSISTANT and m.tool_calls:
            units.append(_group(m, [], report))
            i -= 1
        else:
            units.append(_Unit([m]))
            i -= 1
    units.reverse()
    return units


def _cost(unit: _Unit, counter: TokenCounter) -> int:
    unit.tokens = sum(counter.count_message(m) for m in unit.messages)
    return unit.tokens


def _mask(message: Message, counter: TokenCounter) -> Message:
    cached = _masked.get(message)
    if cached is None:
        cached = Message.tool(
            message.tool_call_id or "", masked_notice(counter.count_message(message))
        )
        _masked[message] = cached
    return cached


def fit_request(
    *,
    system: str,
    history: Sequence[Message],
    turn: Sequence[Message] = (),
    tools: Sequence[ToolDefinition] = (),
    counter: TokenCounter,
    settings: BudgetSettings,
) -> tuple[list[Message], BudgetReport]:
    """The messages to send for this call, fitted to ``settings.limit`` (module docstring)."""
    report = BudgetReport(window=settings.window, limit=settings.limit)
    limit = settings.limit
    system_msg = Message.system(system) if system.strip() else None
    fixed = REQUEST_OVERHEAD_TOKENS + counter.count_tools(tools)
    if system_msg is not None:
        fixed += counter.count_message(system_msg)

    # --- this turn: normalise, then 3b masking ------------------------------------------
    turn_units = _units(turn, report)
    tool_slots = [(u, k) for u in turn_units if u.group for k in u.results]
    keep_first, keep_last = settings.keep_first, settings.keep_last
    if (keep_first or keep_last) and len(tool_slots) > keep_first + keep_last:
        for unit, k in tool_slots[keep_first : len(tool_slots) - keep_last]:
            unit.messages[k] = _mask(unit.messages[k], counter)
            report.results_masked += 1
    turn_cost = sum(_cost(u, counter) for u in turn_units)

    # --- Layer 2: history, newest first, latest user message pinned ----------------------
    hist_units = _units(history, report)
    pinned: list[_Unit] = []
    if hist_units and hist_units[-1].messages and hist_units[-1].messages[0].role is Role.USER:
        pinned = [hist_units.pop()]
        pinned[0].pinned = True
    pinned_cost = sum(_cost(u, counter) for u in pinned)
    available = settings.window - fixed - settings.output_reserve - settings.safety
    budget = (
        available
        if settings.max_history_tokens <= 0
        else min(available, settings.max_history_tokens)
    )
    budget = min(budget, limit - fixed - turn_cost) - pinned_cost
    notice_cost = counter.count_message(Message.system(truncation_notice(len(history))))
    total_hist = sum(_cost(u, counter) for u in hist_units)
    if total_hist <= budget:
        chosen = hist_units
    else:
        chosen = []
        used = notice_cost
        for unit in reversed(hist_units):
            if used + unit.tokens > budget:
                break
            chosen.append(unit)
            used += unit.tokens
        chosen.reverse()
        while chosen and not chosen[0].messages:  # never start on an orphaned result
            chosen.pop(0)

    def total() -> int:
        omitted = sum(u.source for u in hist_units) - sum(u.source for u in chosen)
        notice = notice_cost if omitted else 0
        return (
            fixed
            + notice
            + sum(u.tokens for u in chosen)
            + pinned_cost
            + sum(u.tokens for u in turn_units)
        )

    # --- 3c: drop this turn's oldest groups (never the latest, never user messages) ------
    groups = [u for u in turn_units if u.group]
    while total() > limit and len(groups) > 1:
        victim = groups.pop(0)
        turn_units.remove(victim)
        report.groups_dropped += 1
    # --- still over: more history goes, then results shrink --------------------------------
    while total() > limit and chosen:
        chosen.pop(0)
        while chosen and not chosen[0].messages:
            chosen.pop(0)
    if total() > limit:
        _shrink_results(turn_units, total() - limit, counter, report)
    needed = total()
    if needed > limit:
        raise ContextOverflowError(needed, limit)

    # --- assemble ----------------------------------------------------------------------------
    omitted = sum(u.source for u in hist_units) - sum(u.source for u in chosen)
    out: list[Message] = []
    if system_msg is not None:
        out.append(system_msg)
    if omitted:
        out.append(Message.system(truncation_notice(omitted)))
    for unit in (*chosen, *pinned, *turn_units):
        out.extend(unit.messages)
    report.history_omitted = omitted
    report.history_sent = sum(len(u.messages) for u in (*chosen, *pinned))
    report.request_tokens = needed
    return out, report


def _shrink_results(
    units: list[_Unit], excess: int, counter: TokenCounter, report: BudgetReport
) -> None:
    """Cut this turn's tool results (largest first) until ``excess`` tokens are gone."""
    slots = [(u, k) for u in units if u.group for k in u.results]
    slots.sort(key=lambda s: counter.count_message(s[0].messages[s[1]]), reverse=True)
    for unit, k in slots:
        for _ in range(3):  # token counts are not additive; re-check after each cut
            if excess <= 0:
                return
            message = unit.messages[k]
            current = counter.count_text(message.text)
            note = f"\n[shrunk to fit the context window: was ~{current} tokens]"
            target = current - excess - counter.count_text(note) - 2
            if target <= 0:
                text = f"[result removed to fit the context window: was ~{current} tokens]"
            else:
                text = fit_prefix(message.text, target, counter) + note
            if counter.count_text(text) >= current:
                break
            before = unit.tokens
            unit.messages[k] = Message.tool(message.tool_call_id or "", text)
            excess -= before - _cost(unit, counter)
            report.results_shrunk += 1
