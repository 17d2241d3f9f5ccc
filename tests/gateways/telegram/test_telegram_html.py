"""Reading Telegram HTML: allowed tags are kept in canonical form, the rest is text."""

from __future__ import annotations

import pytest

from duragent.gateways.telegram.telegram_html import (
    Close,
    Open,
    escape_attribute,
    escape_text,
    lex,
    utf16_len,
    visible_text,
)


def test_length_is_counted_in_utf16_units_as_telegram_counts() -> None:
    assert utf16_len("abc") == 3
    assert utf16_len("é") == 1
    assert utf16_len("😀") == 2  # outside the BMP: a surrogate pair
    assert utf16_len("👍🏽") == 4
    assert utf16_len("a\ud800b") == 3  # a lone surrogate (badly decoded input) does not crash


def test_text_and_attributes_are_escaped() -> None:
    assert escape_text('<a href="x">&') == '&lt;a href="x"&gt;&amp;'
    assert escape_attribute('a"b&c') == "a&quot;b&amp;c"


def test_allowed_tags_are_pieces_and_text_is_decoded() -> None:
    assert lex("<b>a &amp; b</b>") == [Open("b", "<b>"), "a & b", Close("b")]


def test_unknown_tags_stay_text() -> None:
    assert lex("<script>x</script>") == ["<script>x</script>"]


def test_a_stray_end_tag_stays_text() -> None:
    assert lex("a</b>") == ["a</b>"]


def test_unclosed_elements_are_closed_at_the_end() -> None:
    assert lex("<b><i>x") == [Open("b", "<b>"), Open("i", "<i>"), "x", Close("i"), Close("b")]


def test_closing_an_outer_element_closes_the_inner_ones() -> None:
    assert lex("<b><i>x</b>y") == [
        Open("b", "<b>"),
        Open("i", "<i>"),
        "x",
        Close("i"),
        Close("b"),
        "y",
    ]


@pytest.mark.parametrize(
    ("tag", "canonical"),
    [
        ("<B>", "<b>"),
        (
            "<a href='https://x.io/?a=1&amp;b=\"2\"'>",
            '<a href="https://x.io/?a=1&amp;b=&quot;2&quot;">',
        ),
        ('<a href="https://x.io" onclick="evil()">', '<a href="https://x.io">'),
        ('<code class="language-python">', "<code>"),  # a language belongs in <pre>
        ('<code class="evil">', "<code>"),
        ('<code class="language-a b">', "<code>"),
        ('<span class="tg-spoiler">', '<span class="tg-spoiler">'),
        ('<tg-emoji emoji-id="123">', '<tg-emoji emoji-id="123">'),
        ("<blockquote expandable>", "<blockquote expandable>"),
        ('<pre style="x">', "<pre>"),
    ],
)
def test_start_tags_keep_only_what_telegram_reads(tag: str, canonical: str) -> None:
    start = lex(f"{tag}x")[0]
    assert isinstance(start, Open)
    assert start.markup == canonical


@pytest.mark.parametrize("tag", ["<a>", '<span class="other">', '<tg-emoji emoji-id="x">'])
def test_an_element_telegram_would_refuse_keeps_its_text_and_loses_its_tags(tag: str) -> None:
    start, text, end = lex(f"{tag}x")
    assert isinstance(start, Open)
    assert (start.markup, text, start.close) == ("", "x", "")
    assert end == Close(start.name)


def test_the_code_of_a_pre_keeps_its_language() -> None:
    assert lex('<pre><code class="language-python">x</code></pre>')[1] == Open(
        "code", '<code class="language-python">'
    )


@pytest.mark.parametrize(
    "markup",
    [
        "<code><b>x</b></code>",
        "<pre><i>x</i></pre>",
        '<pre><code class="language-c"><a href="u">x</a></code></pre>',
        "<blockquote><blockquote>x</blockquote></blockquote>",
        '<a href="u"><a href="v">x</a></a>',
    ],
)
def test_tags_telegram_would_drop_inside_others_are_dropped_and_their_text_kept(
    markup: str,
) -> None:
    pieces = lex(markup)
    inner = [p for p in pieces if isinstance(p, Open)][-1]
    assert (inner.markup, inner.close) == ("", "")
    assert visible_text(markup) == "x"


def test_visible_text_is_what_a_client_shows() -> None:
    assert visible_text('<a href="u">link</a> &lt;b&gt; <pre>1 &amp; 2</pre>') == "link <b> 1 & 2"
