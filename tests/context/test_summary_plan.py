"""When the summaries tier summarises, counted as requests carry the history (issue 38 item 2).

The plan (``context.summary_plan``) counts old tool outputs as the pruning markers a request
carries (the sizes Layer 2 fills by), brings the trigger nearer the low-water mark when each
turn makes several model calls (each carries the history), waits while a round would mostly
rewrite the current summary and the request still carries everything, and hands the
summariser the history as carried. Examples first, then the plan's guarantees over
generated histories with pruning on.
"""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duragent.context.budget import BudgetSettings, ContextOverflowError
from duragent.context.pruning import PrunePolicy, prune_history
from duragent.context.render import HistoryCache, fit_request
from duragent.context.summaries import history_budget, plan_summary, summary_settings
from duragent.context.summary_plan import calls_per_turn, trigger_share
from duragent.context.tokens import counter_for_model
from duragent.context.units import split
from duragent.core.messages import Message, Role, ToolCall
from tests.context.test_render_properties import COUNTERS, budgets, conversations

COUNTER = counter_for_model("gpt-4o")
SETTINGS = summary_settings(32_000, threshold=0.7, keep_recent=0.25)


def words(seed: int, tokens: int) -> str:
    """Distinct words worth about ``tokens`` tokens."""
    out: list[str] = []
    while COUNTER.count_text(" ".join(out)) < tokens:
        out.append(f"w{seed}x{len(out)} and")
    return " ".join(out)


def tool_turns(turns: int, output: int) -> list[Message]:
    """``turns`` turns of a question, one call with an ``output``-token result and an answer,
    then the next question."""
    history: list[Message] = []
    for t in range(turns):
        history.append(Message.user(words(t, 30)))
        call = ToolCall(id=f"c{t}", name="fetch_log", arguments=f'{{"ref": "{t}"}}')
        history.append(Message.assistant(None, (call,)))
        history.append(Message.tool(call.id, words(100 + t, output)))
        history.append(Message.assistant(words(200 + t, 60)))
    history.append(Message.user(words(turns, 30)))
    return history


def test_old_tool_outputs_count_as_the_pruning_markers_a_request_carries() -> None:
    """Ten turns with 600-token outputs cost ~7,200 tokens at full size, over a 10,000-token
    budget's trigger (7,000); a request carries all but the newest ~2,500 tokens of outputs
    as one-line markers, ~3,700 tokens: no summary is due."""
    history = tool_turns(10, 600)
    policy = PrunePolicy(protect=2_000, minimum=500)
    full = COUNTER.sum_messages(history)
    shown = COUNTER.sum_messages(prune_history(history, policy, COUNTER).messages)
    assert 7_000 < full <= 10_000
    assert shown < 7_000
    assert plan_summary(history, COUNTER, 10_000, SETTINGS) is not None  # as before
    assert plan_summary(history, COUNTER, 10_000, SETTINGS, prune=policy) is None


def calls_turns(turns: int, calls: int) -> list[Message]:
    """``turns`` turns of a question, ``calls`` steps of one call with a 40-token result each,
    and an answer; then the next question."""
    history: list[Message] = []
    for t in range(turns):
        history.append(Message.user(words(t, 30)))
        for c in range(calls):
            call = ToolCall(id=f"c{t}x{c}", name="fetch_log", arguments="{}")
            history.append(Message.assistant(None, (call,)))
            history.append(Message.tool(call.id, words(100 * t + c, 40)))
        history.append(Message.assistant(words(200 + t, 60)))
    history.append(Message.user(words(turns, 30)))
    return history


def test_a_history_whose_turns_make_several_calls_is_summarised_nearer_the_low_water_mark() -> None:
    """Each call of a turn sends the history again: a turn of four calls carries it four
    times, a summary is paid once. At 60 % of its budget a chat waits for the 70 % trigger;
    a history of four calls a turn is past its trigger, 25 % + 45 %/√4 ≈ 47.5 % (it waited
    for 70 % too)."""
    tools = calls_turns(8, 3)
    chat = [Message.user(words(0, 30))]
    while COUNTER.sum_messages(chat) < COUNTER.sum_messages(tools):
        chat += [Message.assistant(words(len(chat), 60)), Message.user(words(len(chat), 30))]
    assert calls_per_turn(chat) == 1.0
    assert calls_per_turn(tools) == 32 / 9  # 8 turns of 4 calls, 9 user messages
    assert trigger_share(SETTINGS) == 0.7
    assert abs(trigger_share(SETTINGS, 4.0) - 0.475) < 1e-9
    room = int(COUNTER.sum_messages(chat) / 0.6)

    assert plan_summary(chat, COUNTER, room, SETTINGS) is None
    plan = plan_summary(tools, COUNTER, room, SETTINGS)
    assert plan is not None
    assert plan.tokens_before == COUNTER.sum_messages(tools)  # nothing pruned: full size


def test_a_plan_hands_the_summariser_the_history_as_requests_carry_it() -> None:
    history = tool_turns(10, 600)
    policy = PrunePolicy(protect=2_000, minimum=500)
    plan = plan_summary(history, COUNTER, 5_000, SETTINGS, prune=policy)
    assert plan is not None
    carried = prune_history(history, policy, COUNTER).messages
    assert list(plan.messages) == carried[: plan.count]
    assert any(m is not h for m, h in zip(plan.messages, history, strict=False))  # markers
    assert plan.tokens_before == COUNTER.sum_messages(carried)


def test_a_round_that_would_mostly_rewrite_the_summary_waits_while_everything_fits() -> None:
    """Over the trigger, a round would fold in ~2,200 tokens while re-reading a
    1,500-token summary and writing the next about as long: it waits, as the request still
    carries the whole history. Once the history would not fit its budget, it is written."""
    history = [Message.user(words(0, 200))]
    for t in range(1, 8):
        history += [Message.assistant(words(t, 200)), Message.user(words(50 + t, 200))]
    full = COUNTER.sum_messages(history)  # ~3,000
    room = int(full / 0.8)  # over the 0.7 trigger, under the budget
    first = plan_summary(history, COUNTER, room, SETTINGS)
    assert first is not None  # no summary yet: nothing to re-read
    assert first.tokens_summarised < 2 * 1_500
    assert plan_summary(history, COUNTER, room, SETTINGS, previous=1_500) is None
    assert plan_summary(history, COUNTER, full - 1, SETTINGS, previous=1_500) is not None
    forced = plan_summary(history, COUNTER, room, SETTINGS, previous=1_500, force=True)
    assert forced is not None  # the provider said "too long": no waiting


policies = st.builds(PrunePolicy, protect=st.integers(0, 3_000), minimum=st.integers(1, 2_000))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=conversations(),
    budget=budgets,
    counter_no=st.integers(0, 1),
    policy=policies,
    threshold=st.floats(0.05, 1.0),
    keep=st.floats(0.05, 0.95),
    growth=st.integers(0, 3000),
    previous=st.integers(0, 3000),
)
def test_a_pruned_plan_cuts_at_a_unit_boundary_and_keeps_at_most_the_low_water_mark(
    history: list[Message],
    budget: BudgetSettings,
    counter_no: int,
    policy: PrunePolicy,
    threshold: float,
    keep: float,
    growth: int,
    previous: int,
) -> None:
    counter = COUNTERS[counter_no]
    tier = summary_settings(budget.window, enabled=True, threshold=threshold, keep_recent=keep)
    room = history_budget(budget, 0)
    plan = plan_summary(
        history, counter, room, tier, growth=growth, prune=policy, previous=previous
    )
    index = HistoryCache()
    with contextlib.suppress(ContextOverflowError):  # a request warms the cache first
        fit_request(
            system="s", history=history, counter=counter, settings=budget, history_cache=index
        )
    assert plan == plan_summary(
        history, counter, room, tier, growth=growth, prune=policy, previous=previous, index=index
    )
    if plan is None:
        return
    last_user = max(i for i, m in enumerate(history) if m.role is Role.USER)
    assert 0 < plan.count <= last_user
    shown = prune_history(list(history), policy, counter).messages
    assert list(plan.messages) == shown[: plan.count]
    # what stays verbatim, as carried, latest message included: the low-water mark
    tail = counter.sum_messages(shown[last_user:])
    kept = sum(
        counter.count_message(m) for u in split(shown[plan.count : last_user]) for m in u.messages
    )
    assert kept + tail <= max(keep * max(0, room - growth), tail) + 1e-6
    rest = history[plan.count :]
    summarised_calls = {c.id for m in history[: plan.count] for c in m.tool_calls}
    assert not any(m.role is Role.TOOL and m.tool_call_id in summarised_calls for m in rest)
