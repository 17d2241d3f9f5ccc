from __future__ import annotations

import pytest

from duragent.context.tokens import TokenCounter, counter_for_model
from duragent.context.truncation import fit_prefix, fit_suffix, truncate_tool_result


class Chars:
    """One token per character: exact, easy expectations."""

    name = "chars"

    def count_text(self, text: str) -> int:
        return len(text)


CHARS = TokenCounter(Chars())


def test_a_result_under_the_limit_is_unchanged() -> None:
    result = truncate_tool_result("short", 10, "head", CHARS)
    assert result.text == "short"
    assert not result.truncated


def test_head_keeps_the_start_with_the_specs_indicator() -> None:
    result = truncate_tool_result("abcdefghij" * 3, 8, "head", CHARS)
    assert result.text == "abcdefgh\n\n[truncated: kept first ~8 of ~30 tokens (head)]"
    assert result.truncated
    assert result.original_tokens == 30


def test_tail_keeps_the_end_with_the_specs_indicator() -> None:
    result = truncate_tool_result("0123456789" * 3, 5, "tail", CHARS)
    assert result.text == "[truncated: kept last ~5 of ~30 tokens (tail)]\n\n56789"


def test_both_keeps_start_and_end_around_the_indicator() -> None:
    result = truncate_tool_result("a" * 10 + "m" * 20 + "z" * 10, 10, "both", CHARS)
    assert result.text == (
        "aaaaa\n\n[truncated: kept first+last ~10 of ~40 tokens (both)]\n\nzzzzz"
    )


@pytest.mark.parametrize("strategy", ["head", "tail", "both"])
def test_cuts_never_split_a_character_and_always_encode(strategy: str) -> None:
    counter = counter_for_model("gpt-4o")
    text = "日本語のテキスト🙂emoji👩‍👩‍👧mixed" * 500
    result = truncate_tool_result(text, 100, strategy, counter)  # type: ignore[arg-type]
    result.text.encode("utf-8")  # raises on a lone surrogate or a broken character
    assert result.truncated
    body = result.text.replace("\n\n", "")
    assert all(ch in text or ch in "[]~:+()" or ch.isascii() for ch in body)


def test_lone_surrogates_at_the_cut_are_dropped() -> None:
    text = "ab" + "\ud83d\ude00" * 10  # surrogate pairs as separate code points
    kept = fit_prefix(text, 3, CHARS)
    assert kept == "ab"
    kept_tail = fit_suffix("\ud83d\ude00" * 3, 2, CHARS)
    assert kept_tail == "\ud83d\ude00"


def test_real_tokenizer_truncation_lands_at_the_limit() -> None:
    counter = counter_for_model("gpt-4o")
    text = " ".join(f"word{i}" for i in range(20000))
    result = truncate_tool_result(text, 500, "head", counter)
    kept = result.text.split("\n\n[truncated")[0]
    assert 490 <= counter.count_text(kept) <= 500
