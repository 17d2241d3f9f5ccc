"""The guarantee, property-tested: no request the runtime builds overflows or breaks the rules.

For random histories (unicode, huge tool outputs, parallel calls, dangling calls, orphan
results), random windows and settings, and both counters (tiktoken and the estimate):

(a) the request fits the window with the output reserve left free, by the same counter;
(b) every tool call is answered and no tool result is orphaned;
(c) the system prompt and the latest user message are kept;
(d) OpenAI and Anthropic message rules hold (Anthropic: alternating roles starting with the
    user, tool results in the user turn right after their tool_use).
(e) no history is omitted while the free room could hold the next omitted unit.
If even the minimum cannot fit, a clear ContextOverflowError is raised instead.
"""

from __future__ import annotations

import itertools
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duragent.context.budget import BudgetSettings, ContextOverflowError
from duragent.context.notices import calls_left_out_notice, removed_notice
from duragent.context.render import fit_request, masked_notice, truncation_notice
from duragent.context.tokens import EstimateCounter, TokenCounter, counter_for_model
from duragent.context.units import Unit, split
from duragent.core.messages import Message, Role, ToolCall, ToolDefinition
from duragent.llm.anthropic_provider import to_anthropic_request

COUNTERS = [counter_for_model("gpt-4o"), TokenCounter(EstimateCounter())]

text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=0, max_size=300
)
big_text = st.one_of(
    text,
    st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=20), st.integers(50, 3000)),
)


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    messages: list[Message] = []
    n = draw(st.integers(0, 40))
    call_no = 0
    for _ in range(n):
        kind = draw(st.sampled_from(["user", "assistant", "calls", "orphan", "dangling"]))
        if kind == "user":
            messages.append(Message.user(draw(text)))
        elif kind == "assistant":
            messages.append(Message.assistant(draw(text)))
        elif kind in ("calls", "dangling"):
            k = draw(st.integers(1, 4))
            calls = tuple(
                ToolCall(
                    id=f"c{call_no + i}",
                    name="bash",
                    arguments=draw(st.sampled_from(['{"command": "ls"}', "{}", '{"broken": '])),
                )
                for i in range(k)
            )
            call_no += k
            messages.append(Message.assistant(draw(st.one_of(st.none(), text)), calls))
            if kind == "calls":
                answered = draw(st.lists(st.sampled_from(calls), unique=True))
                messages.extend(Message.tool(c.id, draw(big_text)) for c in answered)
        else:
            messages.append(Message.tool(f"ghost{call_no}", draw(text)))
            call_no += 1
    messages.append(Message.user(draw(text)))
    return messages


@st.composite
def turns(draw: st.DrawFn) -> list[Message]:
    messages: list[Message] = []
    for g in range(draw(st.integers(0, 12))):
        k = draw(st.integers(1, 3))
        calls = tuple(ToolCall(id=f"t{g}_{i}", name="bash", arguments="{}") for i in range(k))
        messages.append(Message.assistant(None, calls))
        messages.extend(Message.tool(c.id, draw(big_text)) for c in calls)
    return messages


budgets = st.builds(
    BudgetSettings,
    window=st.integers(600, 40_000),
    output_reserve=st.integers(0, 4096),
    max_history_tokens=st.sampled_from([0, 200, 2_000, 20_000]),
    keep_first=st.integers(0, 3),
    keep_last=st.integers(0, 6),
)


def check_rules(out: list[Message]) -> None:
    # (b) + OpenAI: results directly follow their call, exactly one per call, no orphans
    i = 0
    while i < len(out):
        m = out[i]
        if m.role is Role.TOOL:
            raise AssertionError(f"orphan tool result at {i}")
        if m.role is Role.ASSISTANT and m.tool_calls:
            ids = [c.id for c in m.tool_calls]
            results = []
            j = i + 1
            while j < len(out) and out[j].role is Role.TOOL:
                results.append(out[j].tool_call_id)
                j += 1
            assert results == list(dict.fromkeys(ids)), (ids, results)
            i = j
        else:
            i += 1
    # (d) Anthropic
    _, turns_, _ = to_anthropic_request(out)
    assert turns_[0]["role"] == "user"
    for a, b in itertools.pairwise(turns_):
        assert a["role"] != b["role"]
    for k, t in enumerate(turns_):
        uses = [b["id"] for b in t["content"] if b["type"] == "tool_use"]
        if uses:
            nxt = turns_[k + 1]["content"]
            got = [b["tool_use_id"] for b in nxt if b["type"] == "tool_result"]
            assert set(uses) <= set(got)
        for block in t["content"]:
            if block["type"] == "tool_result":
                assert t["role"] == "user"
            if block["type"] == "text":
                assert block["text"].strip()


@settings(
    max_examples=int(os.environ.get("DURAGENT_PROPERTY_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    history=conversations(),
    turn=turns(),
    budget=budgets,
    system=st.one_of(st.just(""), text, big_text),
    with_tools=st.booleans(),
    counter_index=st.integers(0, 1),
)
def test_no_request_overflows_or_breaks_provider_rules(
    history: list[Message],
    turn: list[Message],
    budget: BudgetSettings,
    system: str,
    with_tools: bool,
    counter_index: int,
) -> None:
    counter = COUNTERS[counter_index]
    tools = [ToolDefinition(name="bash", description="Run a command " * 5)] if with_tools else []
    latest = history[-1]
    try:
        out, report = fit_request(
            system=system, history=history, turn=turn, tools=tools, counter=counter, settings=budget
        )
    except ContextOverflowError:
        # legitimate only if the system prompt, tools and the latest message cannot fit
        minimum = counter.count_messages(
            [m for m in (Message.system(system), latest) if m.text.strip() or m is latest]
        ) + counter.count_tools(tools)
        last_group = [m for m in turn if m.role is Role.ASSISTANT][-1:] if turn else []
        floor = minimum + sum(counter.count_message(m) for m in last_group)
        # dropping older history means sending its notice: the least it costs is the notice
        # or, when cheaper, the rest of the history itself
        rest = sum(counter.count_message(m) for m in history[:-1])
        if rest:
            notice = Message.system(truncation_notice(len(history)))
            floor += min(rest, counter.count_message(notice))
        # each call of the last group needs a result: its own, or the shrinker's smallest, the
        # "removed" notice naming its size (a notice the model can read, never nothing)
        results = {m.tool_call_id: m for m in turn if m.role is Role.TOOL}
        for call in last_group[0].tool_calls if last_group else ():
            result = results.get(call.id)
            full = counter.count_message(result) if result is not None else 0
            least = counter.count_message(Message.tool(call.id, removed_notice(full)))
            floor += min(full, least) if result is not None else least
        # older iterations: each call with its results masked, or the notice that leaves
        # them all out (issue 38: calls are never left out silently), whichever is less
        older = [m for m in turn if m.role is Role.ASSISTANT][:-1]
        if older:
            least = sum(counter.count_message(m) for m in older)
            for m in turn[: turn.index(last_group[0])]:
                if m.role is Role.TOOL:
                    mask = Message.tool(
                        m.tool_call_id or "", masked_notice(counter.count_message(m))
                    )
                    least += min(counter.count_message(m), counter.count_message(mask))
            calls = sum(len(m.tool_calls) for m in older)
            notice = Message.system(calls_left_out_notice(calls, len(older)))
            floor += min(least, counter.count_message(notice))
        legitimate = floor > budget.limit
        assert legitimate, "ContextOverflowError although a valid request was possible"
        return
    # (a) fits, by the same counter, with the reply reserve free
    sent = counter.count_messages(out) + counter.count_tools(tools)
    assert sent <= budget.limit <= budget.window - budget.output_reserve
    assert report.request_tokens == sent
    # (c) system prompt first, latest user message kept
    if system.strip():
        assert out[0].role is Role.SYSTEM
        assert out[0].text == system
    assert any(m is latest for m in out)
    check_rules(out)


uncapped_budgets = st.builds(
    BudgetSettings,
    window=st.integers(600, 40_000),
    output_reserve=st.integers(0, 4096),
    max_history_tokens=st.just(0),
    keep_first=st.integers(0, 3),
    keep_last=st.integers(0, 6),
)


@settings(
    max_examples=int(os.environ.get("DURAGENT_PROPERTY_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    history=conversations(),
    turn=turns(),
    budget=uncapped_budgets,
    system=st.one_of(st.just(""), text),
    counter_index=st.integers(0, 1),
)
def test_no_history_is_omitted_while_the_free_room_could_hold_the_next_omitted_message(
    history: list[Message],
    turn: list[Message],
    budget: BudgetSettings,
    system: str,
    counter_index: int,
) -> None:
    """(e) history fills what the turn leaves: the free room is below the next omitted cost."""
    counter = COUNTERS[counter_index]
    try:
        _, report = fit_request(
            system=system, history=history, turn=turn, counter=counter, settings=budget
        )
    except ContextOverflowError:
        return
    if not report.history_omitted:
        return
    omitted: list[Unit] = []
    source = 0
    for unit in split(history):
        if source >= report.history_omitted:
            break
        omitted.append(unit)
        source += unit.source
    assert source == report.history_omitted  # whole units, oldest first
    newest = next(u for u in reversed(omitted) if u.messages)
    cost = sum(counter.count_message(m) for m in newest.messages)
    # history was filled with the notice budgeted for naming every message; the report
    # counts the notice sent, which names fewer (and may cost fewer tokens)
    budgeted = counter.count_message(Message.system(truncation_notice(len(history))))
    sent = counter.count_message(Message.system(truncation_notice(report.history_omitted)))
    free = budget.limit - report.request_tokens - (budgeted - sent)
    assert free < cost, (free, cost)
