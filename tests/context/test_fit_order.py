"""History is fitted after this turn's groups (seed 002: 3c always preserves history).

Order: the latest user message, then 3b/3c on this turn alone (``turn_fit``), then history
into what is left.
"""

from __future__ import annotations

from duragent.context.budget import BudgetSettings
from duragent.context.render import fit_request
from duragent.context.tokens import EstimateCounter, TokenCounter
from duragent.core.messages import Message, Role, ToolCall, ToolDefinition


class Chars:
    name = "chars"

    def count_text(self, text: str) -> int:
        return len(text)


CHARS = TokenCounter(Chars())


def call(call_id: str) -> Message:
    return Message.assistant(None, (ToolCall(id=call_id, name="t", arguments="{}"),))


def test_fitting_the_turn_keeps_the_short_history_that_then_fits() -> None:
    # issue 14 item 2: 20 short history messages, three ~7,222-token groups, 16K window;
    # since issue 38 the older two results are masked instead of their iterations dropped
    history = [
        Message.user(f"q{i:02d}" + "." * 13) if i % 2 == 0 else Message.assistant("a" * 16)
        for i in range(20)
    ] + [Message.user("go on")]
    turn: list[Message] = []
    for g in range(3):
        turn += [call(f"c{g}"), Message.tool(f"c{g}", "r" * 7_200)]
    budget = BudgetSettings(window=16_000)  # reply reserve 4,096 and 10 % margin: limit 10,304
    out, report = fit_request(
        system="S", history=history, turn=turn, counter=CHARS, settings=budget
    )
    assert report.groups_dropped == 0
    assert report.results_masked == 2
    assert report.history_omitted == 0
    assert [m.text for m in out[1:22]] == [m.text for m in history]
    assert [m.tool_call_id for m in out if m.role is Role.TOOL] == ["c0", "c1", "c2"]
    assert report.request_tokens <= budget.limit


def test_history_fills_what_the_turn_leaves_when_some_must_still_go() -> None:
    history = [Message.user("h" * 100) for _ in range(30)] + [Message.user("now")]
    turn: list[Message] = []
    for g in range(4):
        turn += [call(f"c{g}"), Message.tool(f"c{g}", "r" * 1_000)]
    budget = BudgetSettings(window=3_000, output_reserve=0, safety_ratio=0.0, keep_first=0)
    _, report = fit_request(system="", history=history, turn=turn, counter=CHARS, settings=budget)
    assert report.groups_dropped == 0  # the two older results are masked (issue 38)
    assert report.results_masked == 2
    assert 0 < report.history_omitted < 30
    # nothing else would fit: the next omitted message costs more than the free room
    assert budget.limit - report.request_tokens < CHARS.count_message(history[0])


def test_a_history_cheaper_than_its_truncation_notice_is_kept_rather_than_refused() -> None:
    # Found by the fit property: the request was refused by one token because the floor
    # charged the "[conversation truncated …]" notice for a history that costs less whole.
    history = [Message.user(""), Message.user("0:\u0800")]
    turn = [call("t0_0"), Message.tool("t0_0", "")]
    tools = [ToolDefinition(name="bash", description="Run a command " * 5)]
    budget = BudgetSettings(window=600, output_reserve=432)
    counter = TokenCounter(EstimateCounter())
    out, report = fit_request(
        system="", history=history, turn=turn, tools=tools, counter=counter, settings=budget
    )
    assert report.history_omitted == 0
    assert [m.text for m in out if m.role is Role.USER] == ["", "0:\u0800"]
    assert counter.count_messages(out) + counter.count_tools(tools) <= budget.limit
