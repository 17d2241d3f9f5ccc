"""Every later cut of a saved output keeps naming it: shrink, mask, removal (issue 20 item 5)."""

from __future__ import annotations

from duragent.context.budget import BudgetSettings
from duragent.context.notices import compose, read_cut
from duragent.context.render import fit_request
from duragent.context.tokens import counter_for_model
from duragent.context.truncation import truncate_tool_result
from duragent.core.messages import Message, ToolCall

COUNTER = counter_for_model("gpt-4o")
SAVED = "out_01JABCDEFGHJKMNPQRSTVWXYZ0"
REFERENCE = f"full output saved as {SAVED}, read it with tool_output"


def test_the_3a_indicator_names_the_saved_output_and_is_read_back() -> None:
    for strategy in ("head", "tail", "both"):
        cut = truncate_tool_result("word " * 5_000, 500, strategy, COUNTER, SAVED)
        assert REFERENCE in cut.text
        found = read_cut(cut.text)
        assert found is not None
        assert (found.saved, found.original, found.strategy) == (
            SAVED,
            cut.original_tokens,
            strategy,
        )


def turn_of(results: list[str]) -> list[Message]:
    calls = tuple(ToolCall(id=f"c{i}", name="bash", arguments="{}") for i in range(len(results)))
    out = [Message.assistant(None, calls)]
    return out + [Message.tool(c.id, r) for c, r in zip(calls, results, strict=True)]


def test_a_shrunk_result_keeps_the_reference() -> None:
    text = compose("head", "word " * 3_000, "", 3_000, 90_000, SAVED)
    budget = BudgetSettings(window=2_000, output_reserve=500)

    out, report = fit_request(
        system="s",
        history=[Message.user("go")],
        turn=turn_of([text]),
        counter=COUNTER,
        settings=budget,
    )

    assert report.results_shrunk
    assert REFERENCE in out[-1].text
    assert "of ~90000 tokens" in out[-1].text


def test_a_masked_result_keeps_the_reference() -> None:
    cut = compose("head", "word " * 100, "", 100, 9_000, SAVED)
    budget = BudgetSettings(window=32_000, output_reserve=1_000, keep_first=0, keep_last=1)

    out, report = fit_request(
        system="s",
        history=[Message.user("go")],
        turn=turn_of([cut, "last"]),
        counter=COUNTER,
        settings=budget,
    )

    assert report.results_masked == 1
    assert out[-2].text == f"[result masked — ~9000 tokens removed; {REFERENCE}]"
