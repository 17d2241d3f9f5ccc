"""Every cut a result undergoes tells the model the ORIGINAL size and what was kept.

A result is cut by Layer 3a when it is stored, and may be shrunk again (or masked) when a
request must fit a small window; the later cut keeps the 3a notice's original size.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duragent.context.budget import BudgetSettings, ContextOverflowError
from duragent.context.notices import read_cut
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
        turn += [call(f"c{i}"), Message.tool(f"c{i}", capped if i == 1 else "a result " * 9)]
    budget = BudgetSettings(window=100_000, keep_first=1, keep_last=1)
    out, report = fit_request(
        system="", history=[Message.user("go")], turn=turn, counter=CHARS, settings=budget
    )
    assert report.results_masked == 2
    assert [m.text for m in out if m.tool_call_id == "c1"] == [
        "[result masked — ~50000 tokens removed]"
    ]


COUNTERS = [CHARS, counter_for_model("gpt-4o")]
MASKED = re.compile(r"\[result masked — ~(\d+) tokens removed\]")
REMOVED = re.compile(r"\[result removed to fit the context window: kept ~0 of ~(\d+) tokens\]")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    results=st.lists(
        st.tuples(
            st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=12), st.integers(1, 4000)),
            st.sampled_from(["head", "tail", "both"]),
            st.sampled_from([0, 50, 500, 8_000]),  # 3a cap (0: never cut by 3a)
        ),
        min_size=1,
        max_size=6,
    ),
    window=st.integers(5_000, 30_000),
    keep=st.tuples(st.integers(0, 2), st.integers(0, 2)),
    counter_index=st.integers(0, 1),
)
def test_every_notice_the_model_sees_names_the_original_size(
    results: list[tuple[str, Strategy, int]],
    window: int,
    keep: tuple[int, int],
    counter_index: int,
) -> None:
    counter = COUNTERS[counter_index]
    turn: list[Message] = []
    original: dict[str, int] = {}
    for i, (content, strategy, cap) in enumerate(results):
        original[f"c{i}"] = counter.count_text(content)
        text = truncate_tool_result(content, cap, strategy, counter).text if cap else content
        turn += [call(f"c{i}"), Message.tool(f"c{i}", text)]
    budget = BudgetSettings(
        window=window, output_reserve=1_000, keep_first=keep[0], keep_last=keep[1]
    )
    try:
        out, _ = fit_request(
            system="", history=[Message.user("go")], turn=turn, counter=counter, settings=budget
        )
    except ContextOverflowError:
        return
    for message in out:
        if message.role is not Role.TOOL:
            continue
        size = original[message.tool_call_id or ""]
        cut, masked = read_cut(message.text), MASKED.fullmatch(message.text)
        removed = REMOVED.fullmatch(message.text)
        if masked:
            assert int(masked[1]) >= size
        elif removed:
            assert int(removed[1]) == size
        elif cut is not None:
            assert cut.original == size
            assert len(NOTICE.findall(message.text)) == 1
        else:
            assert counter.count_text(message.text) == size  # sent whole
