"""Every cut a result undergoes tells the model the ORIGINAL size and what was kept.

A result is cut by Layer 3a when it is stored, and may be shrunk again (or masked) when a
request must fit a small window; the later cut keeps the 3a notice's original size.
"""

from __future__ import annotations

import re

import pytest

from duragent.context.budget import BudgetSettings
from duragent.context.render import fit_request
from duragent.context.tokens import TokenCounter, counter_for_model
from duragent.context.truncation import Strategy, truncate_tool_result
from duragent.core.messages import Message, Role, ToolCall

NOTICE = re.compile(
    r"\[truncated: kept (first|last|first\+last) ~(\d+) of ~(\d+) tokens \((\w+)\)\]"
)


class Chars:
    name = "chars"

    def count_text(self, text: str) -> int:
        return len(text)


CHARS = TokenCounter(Chars())


def call(call_id: str) -> Message:
    return Message.assistant(None, (ToolCall(id=call_id, name="t", arguments="{}"),))


def request_with(result: str, counter: TokenCounter, window: int) -> tuple[str, int]:
    turn = [call("c1"), Message.tool("c1", result)]
    budget = BudgetSettings(window=window)
    out, report = fit_request(
        system="sys", history=[Message.user("go")], turn=turn, counter=counter, settings=budget
    )
    assert report.request_tokens <= budget.limit
    return [m for m in out if m.role is Role.TOOL][-1].text, report.results_shrunk


def test_a_100k_result_capped_by_3a_then_shrunk_for_an_8k_window_names_its_original_size() -> None:
    # issue 14 item 3: the 3a notice was cut away and the model read "was ~8018 tokens"
    capped = truncate_tool_result("x" * 100_000, 8_000, "head", CHARS).text
    sent, shrunk = request_with(capped, CHARS, 8_000)
    assert shrunk
    notices = NOTICE.findall(sent)
    assert len(notices) == 1, sent[-300:]
    where, kept, original, strategy = notices[0]
    assert (where, original, strategy) == ("first", "100000", "head")
    body = sent.split("\n\n[truncated")[0]
    assert body == "x" * len(body)
    assert int(kept) == len(body) < 8_000
    assert "was ~8" not in sent


@pytest.mark.parametrize("strategy", ["head", "tail", "both"])
def test_a_re_shrunk_result_keeps_its_strategy_and_original_size_with_a_real_tokenizer(
    strategy: Strategy,
) -> None:
    counter = counter_for_model("gpt-4o")
    text = " ".join(f"line{i}" for i in range(60_000))
    original = counter.count_text(text)
    capped = truncate_tool_result(text, 8_000, strategy, counter).text
    sent, shrunk = request_with(capped, counter, 8_000)
    assert shrunk
    notices = NOTICE.findall(sent)
    assert len(notices) == 1
    _, kept, said_original, said_strategy = notices[0]
    assert (int(said_original), said_strategy) == (original, strategy)
    body = NOTICE.sub("", sent).strip()
    assert abs(counter.count_text(body) - int(kept)) <= 3
    if strategy != "tail":
        assert sent.startswith("line0 line1")
    if strategy != "head":
        assert sent.endswith("line59999")


def test_an_uncut_result_shrunk_to_fit_says_its_size_and_what_was_kept() -> None:
    sent, shrunk = request_with("q" * 20_000, CHARS, 8_000)
    assert shrunk
    ((where, kept, original, strategy),) = NOTICE.findall(sent)
    assert (where, original, strategy) == ("first", "20000", "head")
    assert int(kept) == sent.index("\n\n[truncated")


def test_a_masked_result_that_3a_had_cut_names_its_original_size() -> None:
    capped = truncate_tool_result("y" * 50_000, 100, "head", CHARS).text
    turn: list[Message] = []
    for i in range(4):
        turn += [call(f"c{i}"), Message.tool(f"c{i}", capped if i == 1 else "small")]
    budget = BudgetSettings(window=100_000, keep_first=1, keep_last=1)
    out, report = fit_request(
        system="", history=[Message.user("go")], turn=turn, counter=CHARS, settings=budget
    )
    assert report.results_masked == 2
    assert [m.text for m in out if m.tool_call_id == "c1"] == [
        "[result masked — ~50000 tokens removed]"
    ]
