"""Long HTML is cut into messages that each fit Telegram's limit and parse on their own."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duragent.gateways.telegram.html_split import split_html
from duragent.gateways.telegram.telegram_html import escape_text, utf16_len
from tests.gateways.telegram.html_validator import visible, visible_length

WORDS = st.sampled_from(["a", "word", "é", "😀", "👍🏽", "&", "<", ">", '"', "x" * 30, "ünï"])
SPACES = st.sampled_from([" ", "  ", "\n", "\n\n", "\t", "\n    "])
TEXT = st.lists(st.one_of(WORDS, SPACES), max_size=80).map("".join)
LIMITS = st.integers(min_value=2, max_value=120)
LANGUAGES = st.sampled_from(["python", "c++", "objective-c", "f#"])


@st.composite
def telegram_html(draw: st.DrawFn) -> str:
    """Well-formed Telegram HTML: text in styles, links, quotes and code blocks."""
    parts = []
    for _ in range(draw(st.integers(min_value=0, max_value=6))):
        text = escape_text(draw(TEXT))
        shape = draw(st.sampled_from(["text", "b", "i-in-b", "a", "code", "pre", "quote"]))
        if shape == "text":
            parts.append(text)
        elif shape == "b":
            parts.append(f"<b>{text}</b>")
        elif shape == "i-in-b":
            parts.append(f"<b>{text}<i>{text}</i>{text}</b>")
        elif shape == "a":
            parts.append(f'<a href="https://x.io/?q=&quot;1&quot;">{text}</a>')
        elif shape == "code":
            parts.append(f"<code>{text}</code>")
        elif shape == "pre":
            parts.append(f'<pre><code class="language-{draw(LANGUAGES)}">{text}</code></pre>')
        else:
            parts.append(f"<blockquote>{text}<b>{text}</b></blockquote>")
    return "".join(parts)


TAG_SOUP = st.lists(
    st.sampled_from(
        [
            "<b>",
            "</b>",
            "<i>",
            "</i>",
            "<pre>",
            "</pre>",
            '<code class="language-py">',
            "</code>",
            "<a href='x\"y'>",
            "<a>",
            "</a>",
            "<blockquote>",
            "</blockquote>",
            "<script>",
            "</p>",
            "<",
            ">",
            "&",
            "&amp;",
            "&lt",
            "&#x1F600;",
            "&bogus;",
            "word",
            " ",
            "\n",
            "😀",
        ]
    ),
    max_size=60,
).map("".join)


def squeeze(text: str) -> str:
    return "".join(text.split())


@settings(max_examples=200, deadline=None)
@given(markup=telegram_html(), limit=LIMITS)
def test_every_chunk_is_valid_fits_and_is_not_blank(markup: str, limit: int) -> None:
    for chunk in split_html(markup, limit):
        assert visible_length(chunk) <= limit, chunk
        assert visible(chunk).strip(), chunk


@settings(max_examples=200, deadline=None)
@given(markup=telegram_html(), limit=LIMITS)
def test_the_chunks_together_show_the_whole_text(markup: str, limit: int) -> None:
    chunks = split_html(markup, limit)
    assert squeeze("".join(visible(chunk) for chunk in chunks)) == squeeze(visible(markup))


@settings(max_examples=200, deadline=None)
@given(code=TEXT, language=LANGUAGES, limit=LIMITS)
def test_a_split_code_block_is_reopened_with_its_language(
    code: str, language: str, limit: int
) -> None:
    opening = f'<pre><code class="language-{language}">'
    chunks = split_html(f"{opening}{escape_text(code)}</code></pre>", limit)
    for chunk in chunks:
        assert chunk.startswith(opening), chunk
        assert chunk.endswith("</code></pre>"), chunk
    assert squeeze("".join(visible(chunk) for chunk in chunks)) == squeeze(code)


@settings(max_examples=200, deadline=None)
@given(soup=TAG_SOUP, limit=LIMITS)
def test_broken_html_still_splits_into_messages_telegram_accepts(soup: str, limit: int) -> None:
    for chunk in split_html(soup, limit):
        assert visible_length(chunk) <= limit, chunk
        assert visible(chunk).strip(), chunk


def test_markup_that_fits_is_one_chunk_as_it_was() -> None:
    markup = '<b>bold</b> and <a href="https://x.io">a link</a>'
    assert split_html(markup) == [markup]


def test_the_limit_is_telegrams_by_default() -> None:
    chunks = split_html("word " * 2000)
    assert len(chunks) == 3
    assert all(utf16_len(visible(chunk)) <= 4096 for chunk in chunks)


def test_a_paragraph_break_is_preferred_to_a_line_break_or_a_space() -> None:
    text = "a" * 30 + "\n\n" + "b" * 10 + "\n" + "c c c c c"
    assert split_html(text, 50) == ["a" * 30, "b" * 10 + "\nc c c c c"]


def test_a_line_break_is_preferred_to_a_space() -> None:
    assert split_html("aaa aaa\nbbb bbb ccc", 15) == ["aaa aaa", "bbb bbb ccc"]


def test_a_break_that_leaves_the_message_less_than_half_full_waits_for_a_better_one() -> None:
    text = "ab\n\n" + "word " * 10
    assert split_html(text, 20)[0] == "ab\n\nword word word"


def test_a_long_word_is_cut_anywhere() -> None:
    chunks = split_html("x" * 10_000)
    assert [len(chunk) for chunk in chunks] == [4096, 4096, 1808]


def test_an_entity_is_never_cut() -> None:
    chunks = split_html("&amp;" * 10, 3)
    assert chunks == ["&amp;&amp;&amp;", "&amp;&amp;&amp;", "&amp;&amp;&amp;", "&amp;"]


def test_an_emoji_is_never_cut_and_counts_two() -> None:
    chunks = split_html("😀" * 5, 4)
    assert chunks == ["😀😀", "😀😀", "😀"]


def test_a_skin_tone_stays_with_its_emoji() -> None:
    assert split_html("aa👍🏽", 4) == ["aa", "👍🏽"]


def test_open_elements_are_closed_and_reopened_in_order() -> None:
    markup = '<b>bold <a href="https://x.io">link <i>deep text</i></a></b>'
    assert split_html(markup, 12) == [
        '<b>bold <a href="https://x.io">link</a></b>',
        '<b><a href="https://x.io"><i>deep text</i></a></b>',
    ]


def test_indentation_after_a_line_break_stays_with_its_line() -> None:
    markup = "<pre>def f():\n    return 1\n    return 2</pre>"
    assert split_html(markup, 24) == [
        "<pre>def f():\n    return 1</pre>",
        "<pre>    return 2</pre>",
    ]


def test_no_chunk_is_only_whitespace_or_an_empty_element() -> None:
    chunks = split_html("<b>word</b>" + " " * 50 + "<i>   </i>" + "\n" * 50 + "end", 10)
    assert chunks == ["<b>word</b>", "end"]


def test_an_element_is_not_written_empty_at_a_cut() -> None:
    chunks = split_html("aaaa<b>bbbb</b>", 4)
    assert chunks == ["aaaa", "<b>bbbb</b>"]


def test_text_outside_the_subset_is_escaped_on_the_way() -> None:
    assert split_html("a < b & <script>") == ["a &lt; b &amp; &lt;script&gt;"]


def test_a_limit_below_one_emoji_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        split_html("x", 1)


def test_a_hundred_kilobyte_reply_splits_into_full_messages() -> None:
    paragraph = "A sentence of the reply, with <b>bold</b> words &amp; more. " * 8
    chunks = split_html("\n\n".join([paragraph] * 250))
    lengths = [visible_length(chunk) for chunk in chunks]
    assert max(lengths) <= 4096
    assert min(lengths[:-1]) > 2048  # breaks that leave a message half empty are not taken
    assert all(re.fullmatch(r"(?s)(?!\s).*\S", visible(chunk)) for chunk in chunks)
