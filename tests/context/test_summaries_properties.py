"""The summaries tier keeps every guarantee of Layers 1–3, property-tested.

Over generated histories (the render property tests' generator), windows, settings, pins and
summaries, with both counters:

- a fitted request with the reference block still fits ``limit`` (or raises the clear
  ``ContextOverflowError``), pairs every call with its results and keeps the latest user
  message; the block is always the user message right after the runtime's system messages,
  a turn's quoted context the message right before the latest user message (or with the
  block when no user message is pinned), and no system message carries either;
- cached and uncached renders are identical with the block;
- a summary plan cuts at a unit boundary (a call never leaves without its results), never
  takes the latest user message or anything after it, and applying it then rendering again
  keeps all of the above — the history a summary shortened is an ordinary history.
"""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duragent.context.budget import BudgetSettings, ContextOverflowError
from duragent.context.quoting import RUNTIME_NOTE, quote, quoted_block
from duragent.context.render import HistoryCache, fit_request, truncation_notice
from duragent.context.summaries import (
    PinnedTooLargeError,
    history_budget,
    plan_summary,
    reference_block,
    summary_settings,
)
from duragent.context.units import split
from duragent.core.messages import Message, Role
from duragent.core.snapshot import message_to_dict
from tests.context.test_render_properties import COUNTERS, budgets, check_rules, conversations

pins = st.lists(
    st.tuples(st.sampled_from(["decision", "note", "task"]), st.text(min_size=1, max_size=80)),
    max_size=4,
)
summaries = st.one_of(st.none(), st.text(min_size=1, max_size=400))
chatter = st.one_of(st.just(""), st.text(max_size=300))


def _check_authority(
    out: list[Message], system: str, block: str, context: str, history: list[Message]
) -> None:
    """Only the runtime's words are system text; the quoted blocks are user messages."""
    quoted = bool(block or context)
    assert out[0].text == (f"{system}\n\n{RUNTIME_NOTE}" if quoted else system)
    runtime = len(out) > 1 and out[1].role is Role.SYSTEM
    if runtime:
        assert out[1].text.startswith(truncation_notice(0)[:24])
    assert all(m.role is not Role.SYSTEM for m in out[1 + runtime :])
    first = 1 + runtime
    if block:
        assert out[first].role is Role.USER
        assert out[first].text == block
        assert [m for m in out if m.text == block] == [out[first]]
        first += 1
    if context:
        at = next(i for i, m in enumerate(out) if m.role is Role.USER and m.text == context)
        latest = _latest_user(history)
        assert at == first or out[at + 1] is latest


def _latest_user(messages: list[Message]) -> Message:
    return next(m for m in reversed(messages) if m.role is Role.USER)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=conversations(),
    budget=budgets,
    counter_no=st.integers(0, 1),
    summary=summaries,
    pinned=pins,
    task=st.one_of(st.none(), st.text(max_size=2000)),
    said=chatter,
)
def test_every_request_with_a_reference_block_fits_pairs_and_keeps_block_and_latest_message(
    history: list[Message],
    budget: BudgetSettings,
    counter_no: int,
    summary: str | None,
    pinned: list[tuple[str, str]],
    task: str | None,
    said: str,
) -> None:
    counter = COUNTERS[counter_no]
    system = "You are a careful agent."
    fixed = counter.count_message(Message.system(system))
    try:
        block = reference_block(
            summary=summary,
            round_=3,
            task=task,
            pins=pinned,
            counter=counter,
            pinned_budget=max(64, history_budget(budget, fixed) // 4),
        )
    except PinnedTooLargeError as exc:
        message = str(exc)  # the error names the field to change
        assert "pinned_share" in message
        return
    context = quoted_block([("", said)])
    try:
        out, report = fit_request(
            system=system,
            history=history,
            counter=counter,
            settings=budget,
            reference=block,
            context=context,
        )
    except ContextOverflowError:
        return
    assert report.request_tokens <= budget.limit
    assert sum(counter.count_message(m) for m in out) <= budget.limit
    check_rules(out)
    _check_authority(out, system, block, context, history)
    if block:
        if summary is not None and summary.strip():
            assert quote(summary.strip()) in block
        for kind, text in pinned:
            if text.strip():
                assert quote(f"- {kind}: {text.strip()}") in block
    latest = _latest_user(history)
    assert any(m is latest for m in out)
    # cached and uncached renders are identical
    cached, _ = fit_request(
        system=system,
        history=history,
        counter=counter,
        settings=budget,
        reference=block,
        context=context,
        history_cache=HistoryCache(),
    )
    assert [message_to_dict(m) for m in cached] == [message_to_dict(m) for m in out]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=conversations(),
    budget=budgets,
    counter_no=st.integers(0, 1),
    force=st.booleans(),
    threshold=st.floats(0.05, 1.0),
    keep=st.floats(0.05, 0.95),
    growth=st.integers(0, 3000),
)
def test_a_summary_plan_cuts_at_a_unit_boundary_before_the_latest_user_message(
    history: list[Message],
    budget: BudgetSettings,
    counter_no: int,
    force: bool,
    threshold: float,
    keep: float,
    growth: int,
) -> None:
    counter = COUNTERS[counter_no]
    tier = summary_settings(budget.window, enabled=True, threshold=threshold, keep_recent=keep)
    room = history_budget(budget, 0)
    plan = plan_summary(history, counter, room, tier, force=force, growth=growth)
    if plan is None:
        return
    last_user = max(i for i, m in enumerate(history) if m.role is Role.USER)
    assert 0 < plan.count <= last_user
    rest = history[plan.count :]
    # what stays verbatim, latest message included, is keep_recent of the budget left once
    # the summary is in the block (or the latest message and what follows it, if more);
    # orphaned results, which no request carries, cost nothing
    tail = counter.sum_messages(history[last_user:])
    kept = sum(
        counter.count_message(m) for u in split(rest[: last_user - plan.count]) for m in u.messages
    )
    assert kept + tail <= max(keep * max(0, room - growth), tail) + 1e-6
    # a unit boundary: the kept part never starts with a result whose call was summarised
    summarised_calls = {c.id for m in history[: plan.count] for c in m.tool_calls}
    assert not any(m.role is Role.TOOL and m.tool_call_id in summarised_calls for m in rest)
    assert history[plan.count - 1].role is not Role.TOOL or not any(
        c.id == history[plan.count - 1].tool_call_id for m in rest for c in m.tool_calls
    )
    # what is left is an ordinary history: every guarantee holds with a summary block
    block = reference_block(summary="We agreed on X.", round_=1)
    try:
        out, report = fit_request(
            system="s", history=rest, counter=counter, settings=budget, reference=block
        )
    except ContextOverflowError:
        return
    assert report.request_tokens <= budget.limit
    check_rules(out)
    _check_authority(out, "s", block, "", history)
    assert any(m is _latest_user(history) for m in out)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=conversations(),
    budget=budgets,
    counter_no=st.integers(0, 1),
    threshold=st.floats(0.05, 1.0),
    keep=st.floats(0.05, 0.95),
    warm=st.booleans(),
    cut=st.integers(0, 6),
)
def test_a_plan_answered_from_the_history_cache_is_the_plan_without_it(
    history: list[Message],
    budget: BudgetSettings,
    counter_no: int,
    threshold: float,
    keep: float,
    warm: bool,
    cut: int,
) -> None:
    counter = COUNTERS[counter_no]
    tier = summary_settings(budget.window, enabled=True, threshold=threshold, keep_recent=keep)
    index = HistoryCache()
    every = history_budget(budget, 0)
    for shown in (history, history[cut:]):  # then as if older messages had been summarised
        if warm:  # the loop fits a request with the same cache before the next plan
            with contextlib.suppress(ContextOverflowError):
                fit_request(
                    system="s", history=shown, counter=counter, settings=budget, history_cache=index
                )
        rough = counter.sum_messages(shown)
        # the whole budget, then rooms that put the history just under, at and over the
        # threshold (where the plan has to know the exact total)
        near = [int(rough / (threshold * share)) for share in (0.92, 0.97, 1.0, 1.03)]
        for room in (every, *near):
            assert plan_summary(shown, counter, room, tier, index=index) == plan_summary(
                shown, counter, room, tier
            )
