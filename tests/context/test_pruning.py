"""Pruning old tool outputs at render time (issue 20 item 4).

The rule (``context.pruning``): the newest ``protect`` tokens of tool outputs are never
pruned; older ones become a marker in steps of ``minimum`` tokens, and only when that saves at
least ``minimum``. The history itself (what ``events.jsonl`` and the session hold) is never
changed. Properties: every request still fits and pairs every call with its result; a render
with the session's history cache equals one without, over sliding histories.
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
from duragent.core.messages import Message, Role, ToolCall
from tests.context.test_render_properties import (
    COUNTERS,
    budgets,
    check_rules,
    conversations,
    turns,
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
