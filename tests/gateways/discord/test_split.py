"""Replies cut into Discord messages: at most 2,000 characters, never inside a code block."""

from __future__ import annotations

import re

import pytest

from duragent.gateways.discord.split import DISCORD_TEXT_LIMIT, split_message, text_units

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.MULTILINE)


def fences_balanced(chunk: str) -> bool:
    """Every code block a message opens, it closes."""
    return len(FENCE.findall(chunk)) % 2 == 0


def words(text: str) -> list[str]:
    """The text's words, fences aside (what a reader sees across the messages)."""
    return [w for w in text.split() if not FENCE.match(w)]


def test_a_short_reply_is_one_message_as_written() -> None:
    text = "Here:\n```py\nprint('hi')\n```\nDone."
    assert split_message(text) == [text]


@pytest.mark.parametrize("blank", ["", "   ", "\n\n"])
def test_a_blank_reply_is_no_message(blank: str) -> None:
    assert split_message(blank) == []


def test_a_long_reply_is_cut_at_paragraphs_before_the_limit() -> None:
    paragraph = ("word " * 150).strip()  # 749 characters
    text = "\n\n".join([paragraph] * 6)
    chunks = split_message(text)
    assert len(chunks) == 3
    assert all(text_units(c) <= DISCORD_TEXT_LIMIT for c in chunks)
    assert all(c.startswith("word") and c.endswith("word") for c in chunks)
    assert words(" ".join(chunks)) == words(text)


def test_a_paragraph_longer_than_a_message_is_cut_at_a_space() -> None:
    text = " ".join(f"w{i}" for i in range(1500))
    chunks = split_message(text)
    assert all(text_units(c) <= DISCORD_TEXT_LIMIT for c in chunks)
    assert words(" ".join(chunks)) == words(text)


def test_one_word_longer_than_a_message_is_cut_hard() -> None:
    chunks = split_message("x" * 4500)
    assert [len(c) for c in chunks] == [2000, 2000, 500]


def test_a_code_block_that_fits_moves_whole_to_the_next_message() -> None:
    prose = "a" * 1500
    block = "```py\n" + "\n".join(f"line_{i} = {i}" for i in range(40)) + "\n```"
    chunks = split_message(f"{prose}\n\n{block}\n\nafter")
    assert chunks[0] == prose
    assert chunks[1].startswith("```py\nline_0 = 0")
    assert block in chunks[1]
    assert all(fences_balanced(c) for c in chunks)


def test_a_code_block_longer_than_a_message_is_reopened_in_each_with_its_language() -> None:
    lines = [f"print('line {i:04d}')" for i in range(300)]  # about 5,700 characters
    text = "Look:\n```python\n" + "\n".join(lines) + "\n```\nThat's it."
    chunks = split_message(text)
    assert len(chunks) == 3
    assert all(text_units(c) <= DISCORD_TEXT_LIMIT for c in chunks)
    assert all(fences_balanced(c) for c in chunks)
    code_chunks = [c for c in chunks if "```python" in c]
    assert len(code_chunks) >= 3
    kept = [ln for c in chunks for ln in c.splitlines() if ln.startswith("print(")]
    assert kept == lines  # every line once, none cut, in order
    assert chunks[-1].endswith("\n```\nThat's it.")


def test_a_code_line_longer_than_a_message_is_cut_inside_closed_blocks() -> None:
    text = "```\n" + "y" * 5000 + "\n```"
    chunks = split_message(text)
    assert all(text_units(c) <= DISCORD_TEXT_LIMIT for c in chunks)
    assert all(c.startswith("```\n") and c.endswith("\n```") for c in chunks)
    assert "".join(c.removeprefix("```\n").removesuffix("\n```") for c in chunks) == "y" * 5000


def test_an_unclosed_code_block_is_closed_in_each_message_it_is_cut_into() -> None:
    text = "~~~sh\n" + "\n".join(f"echo {i}" for i in range(600))
    chunks = split_message(text)
    assert len(chunks) > 1
    assert all(c.startswith("~~~sh\n") and c.endswith("\n~~~") for c in chunks)


def test_length_is_counted_in_utf16_units_so_emoji_split_earlier() -> None:
    text = "😀" * 1500  # 1,500 code points, 3,000 UTF-16 units
    chunks = split_message(text)
    assert [text_units(c) for c in chunks] == [2000, 1000]
    assert "".join(chunks) == text


def test_fence_markers_in_prose_lines_do_not_open_a_block() -> None:
    text = ("use ``` to fence code " * 120).strip()
    chunks = split_message(text)
    assert all(text_units(c) <= DISCORD_TEXT_LIMIT for c in chunks)
    assert words(" ".join(chunks)) == words(text)


def test_a_code_block_after_cut_prose_still_opens_on_its_own_line() -> None:
    text = " ".join(["words"] * 500) + "\n```js\nlet a = 1;\n```\nend"
    chunks = split_message(text)
    assert all(text_units(c) <= DISCORD_TEXT_LIMIT for c in chunks)
    assert all(fences_balanced(c) for c in chunks)
    assert "\n```js\nlet a = 1;\n```\nend" in chunks[-1]
