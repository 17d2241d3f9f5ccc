"""The history cache changes what a request costs to build, never what the request is.

Oracle test: over random conversations whose window slides (messages appended at the end,
dropped at the start), a message replaced by another object in the middle (as a message with
attachments changes form when its images age), the reordered or replaced histories a cache
cannot continue, and a change of counter, ``fit_request`` with one persistent
``HistoryCache`` returns exactly what it returns without one: the same messages and the same
report.
"""

from __future__ import annotations

import dataclasses
from typing import Any
from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duragent.context import history_index
from duragent.context.budget import BudgetSettings, ContextOverflowError
from duragent.context.history_index import EAGER_UNITS, HistoryCache
from duragent.context.render import fit_request
from duragent.context.units import split
from duragent.core.messages import Message, ToolCall
from tests.context.test_render_properties import COUNTERS, budgets, conversations, turns


def as_values(messages: list[Message]) -> list[tuple[Any, ...]]:
    return [(m.role, m.content, m.tool_call_id, m.tool_calls) for m in messages]


def render(history: list[Message], turn: list[Message], budget: BudgetSettings, **kw: Any) -> Any:
    try:
        out, report = fit_request(
            system="You are terse.", history=history, turn=turn, settings=budget, **kw
        )
    except ContextOverflowError as exc:
        return ("overflow", exc.needed, exc.limit)
    return as_values(out), report


windows = st.lists(
    st.tuples(
        st.integers(0, 6),
        st.integers(0, 8),
        st.sampled_from(["slide", "shuffle", "swap", "replace"]),
    ),
    min_size=1,
    max_size=8,
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    conversation=conversations(),
    turn=turns(),
    budget=budgets,
    steps=windows,
    random=st.randoms(use_true_random=False),
    eager=st.sampled_from([0, 1, 3, EAGER_UNITS]),
)
def test_a_cached_history_renders_exactly_like_an_uncached_one(
    conversation: list[Message],
    turn: list[Message],
    budget: BudgetSettings,
    steps: list[tuple[int, int, str]],
    random: Any,
    eager: int,
) -> None:
    """Also with fewer new units counted on arrival: the lazy walk of a cold start."""
    with patch.object(history_index, "EAGER_UNITS", eager):
        slide(conversation, turn, budget, steps, random)


def slide(
    conversation: list[Message],
    turn: list[Message],
    budget: BudgetSettings,
    steps: list[tuple[int, int, str]],
    random: Any,
) -> None:
    cache = HistoryCache()
    start, end = 0, max(1, len(conversation) // 2)
    for step, (drop, add, how) in enumerate(steps):
        start, end = min(start + drop, len(conversation)), min(end + add, len(conversation))
        start = min(start, end)
        history = conversation[start:end]
        if how == "shuffle" and step % 3 == 2:
            history = random.sample(history, len(history))  # not a continuation
        if how == "replace":
            history = replaced(history, random)
        counter = COUNTERS[step % 2] if how == "swap" else COUNTERS[0]
        cached = render(history, turn, budget, counter=counter, history_cache=cache)
        plain = render(history, turn, budget, counter=counter)
        assert cached == plain


def replaced(history: list[Message], random: Any) -> list[Message]:
    """``history`` with one message, at random, replaced by a changed copy (a new object)."""
    if not history:
        return history
    i = random.randrange(len(history))
    changed = dataclasses.replace(history[i], content=f"{history[i].content} (changed)")
    return [*history[:i], changed, *history[i + 1 :]]


def test_a_message_that_changes_form_is_split_again_with_what_follows_it_only() -> None:
    conversation = [
        Message.user(f"question {i}") if i % 2 == 0 else Message.assistant(f"answer {i}")
        for i in range(300)
    ]
    cache, counter = HistoryCache(), COUNTERS[0]
    first = cache.units(conversation, counter)
    aged = dataclasses.replace(conversation[290], content="question 290 [image: seen before]")
    second = cache.units([*conversation[:290], aged, *conversation[291:]], counter)
    assert second[0] is first[0]  # the units before the change are kept
    assert second[-12] is first[-12]
    assert second[-11] is not first[-11]  # the one before: what follows it decides its end
    assert second[-10] is not first[-10]  # the changed message's unit, and those after it
    assert second[-10].messages[0] is aged


def test_a_tool_result_where_the_next_unit_began_joins_the_unit_before_it() -> None:
    """What follows a unit decides where it ends: it is split again with the changed one."""
    calls = (
        ToolCall(id="c0", name="bash", arguments="{}"),
        ToolCall(id="c1", name="bash", arguments="{}"),
    )
    asked, called, first = (
        Message.user("go"),
        Message.assistant(None, calls),
        Message.tool("c0", "a"),
    )
    later = [Message.user(f"more {i}") for i in range(3)]
    cache, counter = HistoryCache(), COUNTERS[0]
    cache.units([asked, called, first, *later], counter)  # c1's result missing: repaired
    history = [asked, called, first, Message.tool("c1", "b"), *later[1:]]
    units = cache.units(history, counter)
    assert [u.messages for u in units] == [u.messages for u in split(history)]


def test_a_sliding_window_reuses_the_units_it_already_counted() -> None:
    conversation = [
        Message.user(f"question {i}") if i % 2 == 0 else Message.assistant(f"answer {i}")
        for i in range(400)
    ]
    cache, counter = HistoryCache(), COUNTERS[0]
    first = cache.units(conversation[:300], counter)
    second = cache.units(conversation[10:310], counter)
    assert len(second) == 300
    assert second[0] is first[10]  # the same objects: split and counted once
    assert second[-12] is first[-2]
    assert second[-11] is not first[-1]  # the last unit is split again: it may have grown
