"""Layer 2 and Layer 3b/3c with exact expected outputs (one token per character)."""

from __future__ import annotations

import pytest

from duragent.context.budget import BudgetSettings, ContextOverflowError
from duragent.context.render import MISSING_RESULT, fit_request, masked_notice
from duragent.context.tokens import MESSAGE_OVERHEAD_TOKENS, TokenCounter
from duragent.core.messages import Message, Role, ToolCall


class Chars:
    name = "chars"

    def count_text(self, text: str) -> int:
        return len(text)


CHARS = TokenCounter(Chars())


def settings(window: int, **kw: object) -> BudgetSettings:
    base: dict[str, object] = {"window": window, "output_reserve": 0, "safety_ratio": 0.0}
    base.update(kw)
    return BudgetSettings(**base)  # type: ignore[arg-type]


def texts(messages: list[Message]) -> list[str]:
    return [m.text for m in messages]


def call(call_id: str) -> Message:
    return Message.assistant(None, (ToolCall(id=call_id, name="t", arguments="{}"),))


def test_everything_fits_and_nothing_changes() -> None:
    history = [Message.user("hi"), Message.assistant("hello"), Message.user("bye")]
    out, report = fit_request(system="S", history=history, counter=CHARS, settings=settings(1000))
    assert texts(out) == ["S", "hi", "hello", "bye"]
    assert report.history_omitted == 0
    assert report.request_tokens == 3 + 4 * MESSAGE_OVERHEAD_TOKENS + 1 + 2 + 5 + 3


def test_old_history_is_dropped_with_the_specs_notice() -> None:
    history = [Message.user("x" * 50) for _ in range(10)] + [Message.user("latest")]
    out, report = fit_request(system="S", history=history, counter=CHARS, settings=settings(220))
    assert out[1].role is Role.SYSTEM
    assert (
        out[1].text == f"[conversation truncated — {report.history_omitted} older messages omitted]"
    )
    assert out[-1].text == "latest"
    assert report.history_omitted == 10 - (len(out) - 3)
    assert report.request_tokens <= 220


def test_max_history_tokens_caps_history_below_the_window() -> None:
    history = [Message.user("y" * 20) for _ in range(20)]
    _, capped = fit_request(
        system="", history=history, counter=CHARS, settings=settings(10_000, max_history_tokens=100)
    )
    _, uncapped = fit_request(
        system="", history=history, counter=CHARS, settings=settings(10_000, max_history_tokens=0)
    )
    assert capped.history_omitted > 0
    assert uncapped.history_omitted == 0


def test_history_never_starts_on_an_orphaned_tool_result() -> None:
    history = [
        Message.user("a" * 100),
        Message.assistant(None, (ToolCall(id="c1", name="t"), ToolCall(id="c2", name="t"))),
        Message.tool("c1", "r" * 60),
        Message.tool("c2", "r" * 60),
        Message.user("now"),
    ]
    out, _ = fit_request(system="", history=history, counter=CHARS, settings=settings(100))
    roles = [m.role for m in out]
    assert Role.TOOL not in roles[:2]
    assert out[-1].text == "now"


def test_a_dangling_tool_call_is_repaired_before_sending() -> None:
    history = [Message.user("run"), call("c1"), Message.user("hello?")]
    out, report = fit_request(system="", history=history, counter=CHARS, settings=settings(1000))
    assert [m.role for m in out] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.USER]
    assert out[2].tool_call_id == "c1"
    assert out[2].text == MISSING_RESULT
    assert report.calls_repaired == 1


def test_orphan_and_duplicate_results_are_dropped() -> None:
    history = [
        Message.tool("ghost", "orphan"),
        Message.user("q"),
        call("c1"),
        Message.tool("c1", "first"),
        Message.tool("c1", "dup"),
        Message.tool("zz", "stray"),
    ]
    out, report = fit_request(system="", history=history, counter=CHARS, settings=settings(1000))
    assert texts(out) == ["q", "", "first"]
    assert report.orphans_dropped == 3


def test_middle_tool_results_of_the_turn_are_masked() -> None:
    turn: list[Message] = []
    for i in range(9):
        turn += [call(f"c{i}"), Message.tool(f"c{i}", f"result-{i}" * 10)]
    out, report = fit_request(
        system="",
        history=[Message.user("go")],
        turn=turn,
        counter=CHARS,
        settings=settings(10_000, keep_first=2, keep_last=3),
    )
    results = [m for m in out if m.role is Role.TOOL]
    visible = [m.text.startswith("result") for m in results]
    assert visible == [True, True, False, False, False, False, True, True, True]
    assert results[2].text == masked_notice(MESSAGE_OVERHEAD_TOKENS + 2 + len("result-2" * 10))
    assert [m.tool_call_id for m in results] == [f"c{i}" for i in range(9)]  # calls stay
    assert report.results_masked == 4


def test_a_result_shorter_than_its_mask_is_kept_never_grown() -> None:
    """Found by the render property test: masking '' (or "ok") made the request bigger."""
    turn: list[Message] = []
    for i, text in enumerate(["", "ok", "x" * 400, "last"]):
        turn += [call(f"c{i}"), Message.tool(f"c{i}", text)]
    out, report = fit_request(
        system="",
        history=[Message.user("go")],
        turn=turn,
        counter=CHARS,
        settings=settings(10_000, keep_first=0, keep_last=1),
    )
    assert [m.text for m in out if m.role is Role.TOOL][:2] == ["", "ok"]
    assert report.results_masked == 1  # only the long one


def test_masking_is_off_at_zero_zero_and_when_few_results() -> None:
    turn = [call("a"), Message.tool("a", "x"), call("b"), Message.tool("b", "y")]
    for first, last in ((0, 0), (1, 1), (2, 5)):
        out, report = fit_request(
            system="",
            history=[Message.user("go")],
            turn=turn,
            counter=CHARS,
            settings=settings(1000, keep_first=first, keep_last=last),
        )
        assert report.results_masked == 0
        assert [m.text for m in out if m.role is Role.TOOL] == ["x", "y"]


def test_older_results_are_masked_before_any_iteration_group_is_dropped() -> None:
    # issue 38: with 3b off (0/0) and no room, masking still widens before 3c drops a call
    # (3c used to send c3 and c4 only, with no word of c0–c2)
    turn: list[Message] = []
    for i in range(5):
        turn += [call(f"c{i}"), Message.tool(f"c{i}", "z" * 100)]
    history = [Message.user("keep me")]
    out, report = fit_request(
        system="",
        history=history,
        turn=turn,
        counter=CHARS,
        settings=settings(340, keep_first=0, keep_last=0),
    )
    ids = [m.tool_call_id for m in out if m.role is Role.TOOL]
    assert ids == ["c0", "c1", "c2", "c3", "c4"]
    shown = [m.text for m in out if m.role is Role.TOOL]
    assert all(t == masked_notice(MESSAGE_OVERHEAD_TOKENS + 2 + 100) for t in shown[:4])
    assert shown[4].startswith("z")  # the latest result is shrunk, not masked
    assert out[0].text == "keep me"
    assert report.groups_dropped == 0
    assert report.results_masked == 4
    assert report.request_tokens <= 340


def test_a_single_huge_latest_group_is_shrunk_to_fit() -> None:
    turn = [call("c1"), Message.tool("c1", "q" * 5000)]
    out, report = fit_request(
        system="sys", history=[Message.user("go")], turn=turn, counter=CHARS, settings=settings(400)
    )
    assert report.results_shrunk == 1
    assert report.request_tokens <= 400
    kept = out[-1].text.split("\n\n")[0]
    assert kept == "q" * len(kept)
    assert out[-1].text.endswith(f"[truncated: kept first ~{len(kept)} of ~5000 tokens (head)]")


def test_when_the_minimum_cannot_fit_it_fails_clearly() -> None:
    with pytest.raises(ContextOverflowError, match="cannot fit"):
        fit_request(
            system="s" * 500, history=[Message.user("hi")], counter=CHARS, settings=settings(200)
        )


def test_the_latest_user_message_is_kept_even_over_the_history_cap() -> None:
    history = [Message.user("old"), Message.user("L" * 500)]
    out, _ = fit_request(
        system="",
        history=history,
        counter=CHARS,
        settings=settings(10_000, max_history_tokens=100),
    )
    assert out[-1].text == "L" * 500


def test_tool_definitions_are_counted() -> None:
    from duragent.core.messages import ToolDefinition

    tools = [ToolDefinition(name="t" * 10, description="d" * 200)]
    history = [Message.user("u" * 40) for _ in range(10)]
    _, without = fit_request(system="", history=history, counter=CHARS, settings=settings(600))
    _, with_tools = fit_request(
        system="", history=history, tools=tools, counter=CHARS, settings=settings(600)
    )
    assert with_tools.history_omitted > without.history_omitted
