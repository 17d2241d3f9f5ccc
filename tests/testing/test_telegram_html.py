"""Telegram HTML as the fake Bot API parses it: what the user sees, and what it refuses."""

from __future__ import annotations

import pytest

from duragent.testing.telegram_html import EntityParseError, parse_html, utf16_len


def test_tags_become_entities_over_the_visible_text() -> None:
    parsed = parse_html('<b>bold</b> and <a href="https://x.org/?a=1&amp;b=2">link</a>')
    assert parsed.text == "bold and link"
    assert parsed.entities == [
        {"type": "bold", "offset": 0, "length": 4},
        {"type": "text_link", "offset": 9, "length": 4, "url": "https://x.org/?a=1&b=2"},
    ]


def test_offsets_count_utf16_units_as_telegram_does() -> None:
    parsed = parse_html("😀 <i>é</i>")
    assert parsed.entities == [{"type": "italic", "offset": 3, "length": 1}]
    assert utf16_len("😀") == 2


def test_pre_takes_its_language_from_the_inner_code() -> None:
    parsed = parse_html('<pre><code class="language-python">x = 1 &lt; 2</code></pre>')
    assert parsed.text == "x = 1 < 2"
    assert parsed.entities == [{"type": "pre", "offset": 0, "length": 9, "language": "python"}]


def test_spoilers_quotes_and_custom_emoji_are_understood() -> None:
    parsed = parse_html(
        '<span class="tg-spoiler">s</span><tg-spoiler>t</tg-spoiler>'
        '<blockquote expandable>q</blockquote><tg-emoji emoji-id="5">👍</tg-emoji>'
    )
    assert [e["type"] for e in parsed.entities] == [
        "spoiler",
        "spoiler",
        "expandable_blockquote",
        "custom_emoji",
    ]


def test_a_lone_ampersand_and_unknown_entities_stay_literal() -> None:
    assert parse_html("Q&A &nbsp; &#65;").text == "Q&A &nbsp; A"


@pytest.mark.parametrize(
    ("html", "detail"),
    [
        ("é <p>x</p>", 'Unsupported start tag "p" at byte offset 3'),
        ("a < b", "Unclosed start tag at byte offset 2"),
        ("<b>open", 'Can\'t find end tag corresponding to start tag "b"'),
        ("<b><i>x</b></i>", 'Unmatched end tag at byte offset 7, expected "</i>", found "</b>"'),
        ("x</b>", "Unexpected end tag at byte offset 1"),
        ("<span>x</span>", 'Tag "span" must have class "tg-spoiler" at byte offset 0'),
        ("<code><b>x</b></code>", 'Tag "b" is not allowed inside "code" at byte offset 6'),
    ],
)
def test_malformed_html_is_refused_with_telegrams_detail(html: str, detail: str) -> None:
    with pytest.raises(EntityParseError) as refused:
        parse_html(html)
    assert str(refused.value) == detail
