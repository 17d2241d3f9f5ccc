"""Every call of the turn stays visible until the calls themselves cannot fit (issue 38 item 1).

Examples first (one token per character, exact numbers), then properties over random turns
(iterations, calls per iteration, result sizes cut by Layer 3a as the loop cuts them, steering
messages) and windows of the 4K, 8K and 32K tiers, with both counters, rendered alone and
call after call through one ``TurnCache`` as the loop renders them:

- the request shows every call the turn made, or one runtime notice states exactly how many
  of the first calls (whole iterations) are left out, and the rest are all shown;
- calls and results pair up (every result follows its call, every call has a result);
- the request fits the limit;
- masking widened first: when a call is left out, every older result shown is masked;
- iterations go only when needed: with the newest one left out put back (masked), and the
  latest results at their floor (a tenth of the limit, or their "removed" notices when
  those cost more), the request would not fit.
"""

from __future__ import annotations

import functools
import json
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duragent.context.budget import BudgetSettings, ContextOverflowError
from duragent.context.notices import calls_left_out_notice, read_cut, removed_notice
from duragent.context.render import TurnCache, fit_request, masked_notice
from duragent.context.tokens import EstimateCounter, TokenCounter, counter_for_model
from duragent.context.truncation import truncate_tool_result
from duragent.context.turn_fit import LATEST_FLOOR_SHARE
from duragent.core.messages import Message, Role, ToolCall, ToolDefinition
from tests.context.test_render_properties import check_rules


class Chars:
    name = "chars"

    def count_text(self, text: str) -> int:
        return len(text)


CHARS = TokenCounter(Chars())
COUNTERS = [counter_for_model("gpt-4o"), TokenCounter(EstimateCounter())]
TOOLS = [ToolDefinition(name="bash", description="Run a shell command and return its output.")]
SYSTEM = "You are a careful build assistant. " * 8
LEFT_OUT = "[tool calls left out"


def call(call_id: str, command: str = "ls") -> Message:
    arguments = json.dumps({"command": command})
    return Message.assistant(None, (ToolCall(id=call_id, name="bash", arguments=arguments),))


def chars_settings(window: int, *, keep_first: int = 2, keep_last: int = 5) -> BudgetSettings:
    return BudgetSettings(
        window=window,
        output_reserve=0,
        safety_ratio=0.0,
        keep_first=keep_first,
        keep_last=keep_last,
    )


# --- examples ---------------------------------------------------------------------------------


def test_masking_widens_oldest_first_before_any_iteration_is_left_out() -> None:
    turn: list[Message] = []
    for i in range(4):
        turn += [call(f"c{i}"), Message.tool(f"c{i}", f"r{i}" * 200)]
    out, report = fit_request(
        system="",
        history=[Message.user("go")],
        turn=turn,
        counter=CHARS,
        settings=chars_settings(1_200),  # keep 2 + 5 by default: 3b alone masks nothing
    )
    shown = [m.text for m in out if m.role is Role.TOOL]
    assert [t.startswith("[result masked") for t in shown] == [True, True, False, False]
    assert report.results_masked == 2
    assert report.groups_dropped == report.calls_left_out == 0
    assert report.request_tokens <= 1_200


def test_the_oldest_iterations_go_only_when_their_calls_cannot_fit_and_a_notice_says_so() -> None:
    turn: list[Message] = []
    for i in range(20):
        turn += [call(f"c{i}", "make build"), Message.tool(f"c{i}", "z" * 300)]
    budget = chars_settings(1_100, keep_first=0, keep_last=0)
    out, report = fit_request(
        system="", history=[Message.user("go")], turn=turn, counter=CHARS, settings=budget
    )
    ids = [c.id for m in out if m.role is Role.ASSISTANT for c in m.tool_calls]
    left = 20 - len(ids)
    assert 0 < left < 19
    assert ids == [f"c{i}" for i in range(left, 20)]  # the oldest whole iterations went
    assert out[0].role is Role.SYSTEM
    assert out[0].text == calls_left_out_notice(left, left)
    assert report.calls_left_out == report.groups_dropped == left
    results = [m.text for m in out if m.role is Role.TOOL]
    assert all(r.startswith("[result masked") for r in results[:-1])
    assert results[-1].startswith("z")  # the latest result is still read
    assert report.request_tokens <= budget.limit


def test_a_turn_cache_keeps_what_one_request_left_out_for_the_next() -> None:
    # the first request leaves iterations out for a huge latest result; the next one, whose
    # latest result is small, has room for them again: nothing was lost from the cache
    turn: list[Message] = []
    for i in range(16):
        turn += [call(f"c{i}"), Message.tool(f"c{i}", "y" * 40)]
    turn += [call("big"), Message.tool("big", "b" * 2_000)]
    budget = chars_settings(1_300, keep_first=0, keep_last=0)
    cache = TurnCache()
    _, report = fit_request(
        system="",
        history=[Message.user("go")],
        turn=turn,
        counter=CHARS,
        settings=budget,
        turn_cache=cache,
    )
    assert report.calls_left_out > 0
    turn += [call("small"), Message.tool("small", "ok")]
    second, report = fit_request(
        system="",
        history=[Message.user("go")],
        turn=turn,
        counter=CHARS,
        settings=budget,
        turn_cache=cache,
    )
    assert report.calls_left_out == 0
    ids = [c.id for m in second if m.role is Role.ASSISTANT for c in m.tool_calls]
    assert ids == [*(f"c{i}" for i in range(16)), "big", "small"]


# --- properties ---------------------------------------------------------------------------------

FILLER = "make[2]: Entering directory '/src/lib' — compiling module 17 of 300 ✓\n"
SIZES = (0, 1, 40, 400, 2_000)  # lines of FILLER: 0 to ~40,000 tokens before 3a
WINDOWS = (4_000, 4_096, 6_000, 8_000, 8_192, 16_000, 31_999, 32_000, 32_768, 40_000)


@functools.lru_cache(maxsize=512)
def capped(lines: int, cap: int, counter_index: int, saved: bool) -> str:
    """A result as the loop stores it: cut by 3a at the tier's cap, the full output saved."""
    counter = COUNTERS[counter_index]
    output_id = "out_01JD0000000000000000000000" if saved else None
    return truncate_tool_result(FILLER * lines, cap, "head", counter, output_id).text


Case = tuple[BudgetSettings, TokenCounter, list[Message]]
ANY_KEEP_LAST = st.integers(0, 6)
COMMANDS = ("ls", "make -j4 all", "pytest -x tests/")
# Iterations a turn may have, per tier: enough to leave calls out of each tier's requests
MOST = {"4K": 80, "8K": 200, "32K": 500}


@st.composite
def tool_turns(draw: st.DrawFn, cap: int, counter_index: int, most: int) -> list[Message]:
    """A turn of up to ``most`` iterations, cycling a drawn pattern (a long turn stays cheap
    to generate): each iteration makes 1–3 calls, results of drawn sizes, 3a-cut and saved
    as the loop stores them, sometimes followed by a steering message."""
    shape = st.tuples(
        st.lists(st.tuples(st.sampled_from(SIZES), st.booleans()), min_size=1, max_size=3),
        st.sampled_from(COMMANDS),
        st.sampled_from([None, "Checking."]),
        st.integers(0, 9),
    )
    pattern = draw(st.lists(shape, min_size=1, max_size=12))
    iterations = draw(st.one_of(st.integers(1, 12), st.integers(1, most)))
    messages: list[Message] = []
    for g in range(iterations):
        results, command, text, steer = pattern[g % len(pattern)]
        arguments = json.dumps({"command": command})
        calls = tuple(
            ToolCall(id=f"t{g}_{i}", name="bash", arguments=arguments) for i in range(len(results))
        )
        messages.append(Message.assistant(text, calls))
        for c, (lines, saved) in zip(calls, results, strict=True):
            messages.append(Message.tool(c.id, capped(lines, cap, counter_index, saved)))
        if steer == 0:
            messages.append(Message.user("also check the tests"))  # steering: never dropped
    return messages


@st.composite
def cases(
    draw: st.DrawFn,
    *,
    keep_last: st.SearchStrategy[int] = ANY_KEEP_LAST,
    scale: float = 1.0,
) -> Case:
    window = draw(st.sampled_from(WINDOWS))  # the 4K, 8K and 32K tiers, edges included
    counter_index = draw(st.integers(0, 1))
    budget = BudgetSettings.for_model(
        "local-model",
        max_input_tokens=window,
        keep_first=draw(st.integers(0, 3)),
        keep_last=draw(keep_last),
    )
    most = max(1, int(MOST[budget.tier.name] * scale))
    turn = draw(tool_turns(budget.max_tool_result_tokens, counter_index, most))
    return budget, COUNTERS[counter_index], turn


def turn_calls(messages: list[Message]) -> list[str]:
    return [c.id for m in messages if m.role is Role.ASSISTANT for c in m.tool_calls]


def check_request(
    out: list[Message], turn: list[Message], budget: BudgetSettings, counter: TokenCounter, report
) -> int:
    """The properties of one request (module docstring); how many calls it leaves out."""
    sent = counter.count_messages(out) + counter.count_tools(TOOLS)
    assert sent <= budget.limit
    assert report.request_tokens == sent
    check_rules(out)
    made, shown = turn_calls(turn), turn_calls(out)
    notices = [m.text for m in out if m.role is Role.SYSTEM and m.text.startswith(LEFT_OUT)]
    left = len(made) - len(shown)
    assert report.calls_left_out == left
    if left == 0:
        assert shown == made
        assert not notices
        return 0
    assert shown == made[left:]  # the first calls, whole iterations, and only those
    groups = [m for m in turn if m.role is Role.ASSISTANT]
    gone, counted = 0, 0
    while counted < left:
        counted += len(groups[gone].tool_calls)
        gone += 1
    assert counted == left
    assert notices == [calls_left_out_notice(left, gone)]
    latest = set(turn_calls(groups[-1:]))
    originals = {r.tool_call_id: r for r in turn if r.role is Role.TOOL}
    for m in out:  # masking widened before any iteration went
        if m.role is Role.TOOL and m.tool_call_id not in latest:
            original = originals[m.tool_call_id]
            cheaper = counter.count_message(original) <= counter.count_message(
                mask_of(original, counter)
            )
            assert m.text.startswith("[result masked") or cheaper
    return left


def mask_of(result: Message, counter: TokenCounter) -> Message:
    cut = read_cut(result.text)
    size = cut.original if cut is not None else counter.count_message(result)
    return Message.tool(result.tool_call_id or "", masked_notice(size, cut.saved if cut else None))


def removed_cost(result: Message, counter: TokenCounter) -> int:
    """What ``result`` costs shrunk as far as it goes: the "removed" notice naming its size."""
    cut = read_cut(result.text)
    size = cut.original if cut is not None else counter.count_text(result.text)
    notice = removed_notice(size, cut.saved if cut is not None else None)
    return counter.count_message(Message.tool(result.tool_call_id or "", notice))


PROPERTY = settings(
    max_examples=int(os.environ.get("DURAGENT_PROPERTY_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@PROPERTY
@given(case=cases())
def test_every_call_is_shown_or_the_notice_counts_exactly_those_left_out(case: Case) -> None:
    budget, counter, turn = case
    history = [Message.user("old question"), Message.assistant("old answer"), Message.user("go")]
    out, report = fit_request(
        system=SYSTEM, history=history, turn=turn, tools=TOOLS, counter=counter, settings=budget
    )
    check_request(out, turn, budget, counter, report)


@settings(PROPERTY, max_examples=max(10, PROPERTY.max_examples // 5))
@given(case=cases(scale=0.4))  # a render per response: shorter turns
def test_call_after_call_through_one_turn_cache_every_request_keeps_the_properties(
    case: Case,
) -> None:
    budget, counter, turn = case
    cache = TurnCache()
    ends = [i for i in range(1, len(turn) + 1) if i == len(turn) or turn[i].role is Role.ASSISTANT]
    for end in ends:  # the loop renders after each response's results are stored
        out, report = fit_request(
            system=SYSTEM,
            history=[Message.user("go")],
            turn=turn[:end],
            tools=TOOLS,
            counter=counter,
            settings=budget,
            turn_cache=cache,
        )
        check_request(out, turn[:end], budget, counter, report)


@PROPERTY
@given(case=cases(keep_last=st.integers(3, 6)))  # 3b never masks the latest (≤ 3) results
def test_iterations_are_left_out_only_when_the_calls_themselves_cannot_fit(case: Case) -> None:
    budget, counter, turn = case
    pinned = Message.user("go")
    try:
        out, report = fit_request(
            system=SYSTEM,
            history=[pinned],
            turn=turn,
            tools=TOOLS,
            counter=counter,
            settings=budget,
        )
    except ContextOverflowError:
        raise AssertionError("a tool turn in a tier's window must always fit") from None
    left = check_request(out, turn, budget, counter, report)
    if not left:
        return
    groups: list[list[Message]] = []
    for m in turn:
        if m.role is Role.ASSISTANT:
            groups.append([m])
        elif m.role is Role.TOOL:
            groups[-1].append(m)
    gone = report.groups_dropped
    back = groups[gone - 1]  # the newest group left out, put back with its results masked
    back_cost = counter.count_message(back[0]) + sum(
        min(counter.count_message(r), counter.count_message(mask_of(r, counter))) for r in back[1:]
    )
    latest_ids = {c.id for c in groups[-1][0].tool_calls}
    latest_sent = sum(
        counter.count_message(m)
        for m in out
        if m.role is Role.TOOL and m.tool_call_id in latest_ids
    )
    latest_full = sum(counter.count_message(r) for r in groups[-1][1:])
    least = sum(min(counter.count_message(r), removed_cost(r, counter)) for r in groups[-1][1:])
    floor = max(least, min(latest_full, int(budget.limit * LATEST_FLOOR_SHARE)))
    older = groups[:-1]
    reserved = Message.system(
        calls_left_out_notice(sum(len(g[0].tool_calls) for g in older), len(older))
    )
    notice = next(m for m in out if m.text.startswith(LEFT_OUT))
    with_it = (
        report.request_tokens
        - counter.count_message(notice)
        + counter.count_message(reserved)
        - latest_sent
        + floor
        + back_cost
    )
    assert with_it > budget.limit
