"""Pruning old tool outputs at render time (issue 20 item 4; issue 38 item 2).

The rule (``context.pruning``): outputs within the newest ``protect`` tokens of tool outputs
(stepped) stay, and so does the newest output; older ones — the one crossing the span's edge
included, as the seed counts — become a marker in steps of ``minimum`` tokens, and only when
that saves at least ``minimum``. The history itself (what ``events.jsonl`` and the session
hold) is never changed. Pruning runs before Layer 2, which fills the request by the sizes it
carries. Properties: every request still fits exactly and pairs every call with its result;
history is left out only when the next unit as carried would not fit; a render with the
session's history cache equals one without, over sliding histories.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duragent.context.budget import BudgetSettings, ContextOverflowError
from duragent.context.notices import compose
from duragent.context.pruning import PrunePolicy, prune_history, pruned_notice
from duragent.context.render import HistoryCache, fit_request
from duragent.context.tokens import counter_for_model
from duragent.context.units import split
from duragent.core.messages import Message, Role, ToolCall
from tests.context.test_render_properties import (
    COUNTERS,
    budgets,
    check_rules,
    conversations,
    turns,
    uncapped_budgets,
)

COUNTER = counter_for_model("gpt-4o")


def exchange(n: int, output: str, tool: str = "bash") -> list[Message]:
    call = ToolCall(id=f"c{n}", name=tool, arguments="{}")
    return [
        Message.user(f"question {n}"),
        Message.assistant(None, (call,)),
        Message.tool(call.id, output),
        Message.assistant(f"answer {n}"),
    ]


def session(outputs: list[str], tool: str = "bash") -> list[Message]:
    history = [m for n, out in enumerate(outputs) for m in exchange(n, out, tool)]
    return [*history, Message.user("latest")]


def pruned_ids(history: list[Message], pruned: list[Message]) -> list[str]:
    return [
        a.tool_call_id or ""
        for a, b in zip(history, pruned, strict=True)
        if a is not b and a.role is Role.TOOL
    ]


OUTPUT = "word " * 1_000  # ~1,000 tokens


def test_outputs_beyond_the_protected_span_become_markers_and_the_history_is_untouched() -> None:
    history = session([OUTPUT] * 10)
    before = list(history)
    policy = PrunePolicy(protect=3_000, minimum=2_000)

    pruned = prune_history(history, policy, COUNTER)
    out, count = pruned.messages, pruned.count

    assert history == before  # the session's messages (and events.jsonl) keep everything
    ids = pruned_ids(history, list(out))
    assert count == len(ids) > 0
    assert ids == [f"c{n}" for n in range(len(ids))]  # the oldest ones
    kept = [m for m in out if m.role is Role.TOOL and m.text == OUTPUT]
    assert sum(COUNTER.count_message(m) for m in kept) >= 3_000  # the newest span stays
    marker = next(m for m in out if m.role is Role.TOOL and m.text != OUTPUT)
    assert marker.text == pruned_notice(COUNTER.count_message(history[2]))
    assert marker.tool_call_id == "c0"  # the call stays answered


def test_an_output_that_crosses_the_protected_spans_edge_is_pruned_as_the_seed_counts() -> None:
    """Five ~1,000-token outputs, a 1,500-token span in steps of 500: the newest ~1,500
    tokens are the last output and half of the one before. That one crosses the span's edge:
    it was kept whole (two outputs carried, ~2,000 tokens); the seed counts an output into the
    span only while the running total stays within it, so it is pruned."""
    history = session([OUTPUT] * 5)
    policy = PrunePolicy(protect=1_500, minimum=500)

    pruned = prune_history(history, policy, COUNTER)

    assert pruned_ids(history, pruned.messages) == ["c0", "c1", "c2", "c3"]
    sizes = [COUNTER.count_message(m) for m in history if m.role is Role.TOOL]
    total = sum(sizes)
    bound = 500 * ((total - 1_500) // 500)
    assert sum(sizes[:4]) > total - bound >= 1_500 > sizes[4]  # c3 crossed, c4 lies within


def test_the_newest_output_is_never_pruned_whatever_its_size() -> None:
    """With nothing protected the rule reaches every output; the newest, the one the model
    read last, still stays (it was pruned with the rest)."""
    history = session([OUTPUT] * 4)

    pruned = prune_history(history, PrunePolicy(protect=0, minimum=1), COUNTER)

    assert pruned_ids(history, pruned.messages) == ["c0", "c1", "c2"]
    assert pruned.markers == {id(pruned.messages[i]) for i in (2, 6, 10)}


@settings(max_examples=150, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 400), min_size=1, max_size=12),
    protect=st.integers(0, 2_000),
    minimum=st.integers(1, 800),
)
def test_only_outputs_wholly_within_the_protected_span_and_the_newest_stay(
    sizes: list[int], protect: int, minimum: int
) -> None:
    history = session(["tok " * n for n in sizes])
    outputs = [m for m in history if m.role is Role.TOOL]
    cost = [COUNTER.count_message(m) for m in outputs]
    total = sum(cost)
    bound = minimum * ((total - protect) // minimum) if total - protect >= minimum else 0

    pruned = prune_history(history, PrunePolicy(protect=protect, minimum=minimum), COUNTER)

    ids = pruned_ids(history, pruned.messages)
    assert len(ids) == pruned.count == len(pruned.markers)
    assert f"c{len(sizes) - 1}" not in ids  # the newest stays
    if ids:
        assert pruned.saved >= minimum
    start = 0
    for k, size in enumerate(cost[:-1]):
        marker = COUNTER.count_message(Message.tool(f"c{k}", pruned_notice(size)))
        if f"c{k}" in ids:
            assert start < bound  # it starts before the newest ``total − bound`` tokens
        elif pruned.count:
            assert start >= bound or marker >= size  # wholly within them, or already small
        start += size


def test_nothing_is_pruned_when_it_would_save_less_than_the_minimum() -> None:
    history = session([OUTPUT] * 4)

    pruned = prune_history(history, PrunePolicy(protect=3_000, minimum=5_000), COUNTER)

    assert pruned.messages is history
    assert (pruned.count, pruned.saved) == (0, 0)


def test_outputs_of_protected_tools_are_never_pruned() -> None:
    history = session([OUTPUT] * 10, tool="memory")

    pruned = prune_history(
        history,
        PrunePolicy(protect=1_000, minimum=500, protected_tools=frozenset({"memory"})),
        COUNTER,
    )

    assert pruned.messages is history
    assert pruned.count == 0


def test_pruning_advances_in_steps_of_the_minimum_not_at_every_new_output() -> None:
    policy = PrunePolicy(protect=2_000, minimum=3_000)
    seen: list[int] = []
    for n in range(4, 20):
        history = session([OUTPUT] * n)
        seen.append(prune_history(history, policy, COUNTER).count)
    changes = sum(1 for a, b in itertools.pairwise(seen) if a != b)
    assert seen[-1] > 0
    assert changes <= len(seen) // 2  # ~3 outputs per step of 3,000 tokens
    assert seen == sorted(seen)


def test_a_pruned_output_that_was_saved_in_full_keeps_its_saved_id() -> None:
    saved = "out_01JABCDEFGHJKMNPQRSTVWXYZ0"
    cut = compose("head", "x " * 200, "", 200, 9_000, saved)
    history = session([cut] + [OUTPUT] * 6)

    out = prune_history(history, PrunePolicy(protect=2_000, minimum=500), COUNTER).messages

    marker = out[2]
    assert marker.text == pruned_notice(9_000, saved)
    assert saved in marker.text
    assert "tool_output" in marker.text


def test_markers_are_made_once_per_output_and_the_saving_is_exact() -> None:
    history = session([OUTPUT] * 10)
    policy = PrunePolicy(protect=3_000, minimum=2_000)

    first = prune_history(history, policy, COUNTER)
    second = prune_history(list(history), policy, COUNTER)

    assert all(a is b for a, b in zip(first.messages, second.messages, strict=True))
    saved = COUNTER.count_messages(history) - COUNTER.count_messages(first.messages)
    assert first.saved == saved >= policy.minimum


def test_a_pruned_request_reports_the_results_it_pruned() -> None:
    history = session([OUTPUT] * 10)
    budget = BudgetSettings(
        window=32_000, output_reserve=4_000, prune=PrunePolicy(protect=3_000, minimum=2_000)
    )

    out, report = fit_request(system="s", history=history, counter=COUNTER, settings=budget)

    assert report.results_pruned == sum(1 for m in out if m.text.startswith("[old tool output"))
    assert report.results_pruned > 0
    assert report.to_dict()["results_pruned"] == report.results_pruned
    assert report.request_tokens == COUNTER.count_messages(out)
    unpruned = fit_request(
        system="s", history=history, counter=COUNTER, settings=replace(budget, prune=None)
    )[1]
    assert report.history_sent == unpruned.history_sent  # the same conversation…
    assert report.request_tokens < unpruned.request_tokens  # …for fewer tokens


def test_layer_2_fills_by_the_size_a_request_carries_and_sends_the_whole_history() -> None:
    """Ten ~1,000-token outputs: ~10,500 tokens at full size, ~4,300 as carried, against a
    6,000-token history budget. Chosen by full size, Layer 2 kept the newest ~6,000 and
    pruning then shrank them (five turns left out, that no summary might hold); chosen by
    carried size the whole history is sent, and what is counted is what is sent."""
    history = session([OUTPUT] * 10)
    budget = BudgetSettings(
        window=12_000,
        output_reserve=1_000,
        max_history_tokens=6_000,
        prune=PrunePolicy(protect=3_000, minimum=2_000),
    )
    assert COUNTER.count_messages(history) > 10_000

    out, report = fit_request(system="s", history=history, counter=COUNTER, settings=budget)
    cached, again = fit_request(
        system="s", history=history, counter=COUNTER, settings=budget, history_cache=HistoryCache()
    )

    assert report.history_omitted == 0
    assert report.history_sent == len(history)
    assert report.request_tokens == COUNTER.count_messages(out) <= budget.limit
    assert report.results_pruned == sum(1 for m in out if m.text.startswith("[old tool output"))
    assert report.results_pruned > 0
    check_rules(out)
    assert [m.text for m in cached] == [m.text for m in out]
    assert again == report


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    history=conversations(),
    turn=turns(),
    budget=uncapped_budgets,
    policy=st.builds(PrunePolicy, protect=st.integers(0, 3_000), minimum=st.integers(1, 2_000)),
    counter_index=st.integers(0, 1),
)
def test_with_pruning_history_is_left_out_only_as_it_is_without_pruning(
    history: list[Message],
    turn: list[Message],
    budget: BudgetSettings,
    policy: PrunePolicy,
    counter_index: int,
) -> None:
    """The whole history is sent while it fits as carried; when some must go, Layer 2 chooses
    the very units it chooses without pruning (by full size), so pruning never leaves more
    out, never refills the room it frees with older conversation, and the request counts
    exactly what it sends."""
    counter = COUNTERS[counter_index]
    pruning = replace(budget, prune=policy)
    try:
        plain = fit_request(
            system="s", history=history, turn=turn, counter=counter, settings=budget
        )
    except ContextOverflowError:
        return
    out, report = fit_request(
        system="s", history=history, turn=turn, counter=counter, settings=pruning
    )
    assert counter.count_messages(out) == report.request_tokens <= pruning.limit
    check_rules(out)
    if report.history_omitted:
        assert report.history_omitted == plain[1].history_omitted
        assert report.history_sent == plain[1].history_sent
        assert report.request_tokens <= plain[1].request_tokens
        return
    shown = prune_history(list(history), policy, counter).messages
    assert report.history_sent == sum(len(u.messages) for u in split(shown))  # all of it


policies = st.builds(
    PrunePolicy,
    protect=st.integers(0, 3_000),
    minimum=st.integers(1, 2_000),
    protected_tools=st.sampled_from([frozenset(), frozenset({"bash"})]),
)


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    history=conversations(),
    turn=turns(),
    budget=budgets,
    policy=policies,
    counter_index=st.integers(0, 1),
)
def test_with_pruning_every_request_fits_and_keeps_pairs_and_the_latest_message(
    history: list[Message],
    turn: list[Message],
    budget: BudgetSettings,
    policy: PrunePolicy,
    counter_index: int,
) -> None:
    counter = COUNTERS[counter_index]
    pruning = replace(budget, prune=policy)
    latest = history[-1]
    try:
        out, report = fit_request(
            system="be brief", history=history, turn=turn, counter=counter, settings=pruning
        )
    except ContextOverflowError:
        # pruning only ever makes history cheaper: it never causes an overflow
        try:
            fit_request(
                system="be brief", history=history, turn=turn, counter=counter, settings=budget
            )
        except ContextOverflowError:
            return
        raise
    assert counter.count_messages(out) == report.request_tokens <= pruning.limit
    assert any(m is latest for m in out)
    check_rules(out)
    # the turn is never pruned, only history
    for m in turn:
        if m.role is Role.TOOL and any(o.tool_call_id == m.tool_call_id for o in out):
            assert not any(
                o.tool_call_id == m.tool_call_id and o.text.startswith("[old tool output")
                for o in out
            )


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    sizes=st.lists(st.integers(1, 800), min_size=5, max_size=40),
    keep=st.integers(8, 60),
    policy=policies,
    window=st.integers(2_000, 30_000),
    counter_index=st.integers(0, 1),
)
def test_cached_and_uncached_renders_are_identical_over_a_sliding_session(
    sizes: list[int], keep: int, policy: PrunePolicy, window: int, counter_index: int
) -> None:
    counter = COUNTERS[counter_index]
    budget = BudgetSettings(window=window, output_reserve=window // 4, prune=policy)
    cache = HistoryCache()
    held: list[Message] = []
    for n, size in enumerate(sizes):
        held.extend(exchange(n, "tok " * size, "bash" if n % 3 else "memory"))
        held.append(Message.user(f"now {n}"))
        if len(held) > keep:  # Layer 1: the oldest leave, never leaving a result at the head
            del held[: len(held) - keep]
            while held and held[0].role is Role.TOOL:
                del held[0]
        history = list(held)
        try:
            plain = fit_request(system="s", history=history, counter=counter, settings=budget)
        except ContextOverflowError:
            continue
        cached = fit_request(
            system="s", history=history, counter=counter, settings=budget, history_cache=cache
        )
        assert [(m.role, m.text, m.tool_call_id) for m in cached[0]] == [
            (m.role, m.text, m.tool_call_id) for m in plain[0]
        ]
        assert cached[1] == plain[1]
        held.pop()  # the "now" message was this request's latest; the next exchange follows
