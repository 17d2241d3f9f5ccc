"""A model's Markdown reaches Telegram as the HTML subset Telegram accepts."""

from __future__ import annotations

import pytest

from duragent.gateways.telegram.markdown_html import markdown_to_html
from tests.gateways.telegram.html_validator import visible

RENDERED = {
    "plain text": ("just words", "just words"),
    "bold": ("**bold** and __bold__", "<b>bold</b> and <b>bold</b>"),
    "italic": ("*it* and _it_", "<i>it</i> and <i>it</i>"),
    "strikethrough": ("~~gone~~", "<s>gone</s>"),
    "nested styles": ("**bold *both***", "<b>bold <i>both</i></b>"),
    "inline code": ("run `ls -l`", "run <code>ls -l</code>"),
    "inline code keeps markup as text": ("`<b>*x*</b>`", "<code>&lt;b&gt;*x*&lt;/b&gt;</code>"),
    "link": ("[docs](https://example.com/a)", '<a href="https://example.com/a">docs</a>'),
    "autolink": ("<https://example.com>", '<a href="https://example.com">https://example.com</a>'),
    "mail autolink": ("<me@example.com>", '<a href="mailto:me@example.com">me@example.com</a>'),
    "bold link text": ("[**b**](https://x.io)", '<a href="https://x.io"><b>b</b></a>'),
    "code in a link is plain": ("[`x`](https://x.io)", '<a href="https://x.io">x</a>'),
    "relative link shows its target": ("[spec](/docs/a.md)", "spec (/docs/a.md)"),
    "image is a link": (
        "![a cat](https://x.io/cat.png)",
        '<a href="https://x.io/cat.png">a cat</a>',
    ),
    "image without alt": ("![](https://x.io/c.png)", '<a href="https://x.io/c.png">image</a>'),
    "heading is a bold line": ("# Title\n\ntext", "<b>Title</b>\n\ntext"),
    "bold inside a heading is not doubled": ("## A **b** c", "<b>A b c</b>"),
    "paragraphs": ("one\n\ntwo", "one\n\ntwo"),
    "soft and hard breaks are line breaks": ("a\nb  \nc", "a\nb\nc"),
    "bullet list": ("- a\n- b", "• a\n• b"),
    "ordered list keeps its start": ("3. a\n4. b", "3. a\n4. b"),
    "nested list is indented": ("- a\n  - b\n- c", "• a\n  ◦ b\n• c"),
    "loose list stays compact": ("- a\n\n- b", "• a\n• b"),
    "block quote": ("> said\n> more", "<blockquote>said\nmore</blockquote>"),
    "nested quote is flattened": ("> a\n>\n> > b", "<blockquote>a\n\nb</blockquote>"),
    "fenced code with language": (
        "```python\nif a < b:\n    pass\n```",
        '<pre><code class="language-python">if a &lt; b:\n    pass</code></pre>',
    ),
    "fenced code without language": ("```\nx & y\n```", "<pre>x &amp; y</pre>"),
    "odd language is dropped": ('```"><script>\nx\n```', "<pre>x</pre>"),
    "indented code": ("    code()\n", "<pre>code()</pre>"),
    "rule": ("a\n\n---\n\nb", "a\n\n——————————\n\nb"),
    "table is monospace": (
        "| name | n |\n|------|--:|\n| **ab** | 1 |\n| c | 10 |",
        "<pre>name |  n\n-----+---\nab   |  1\nc    | 10</pre>",
    ),
    "blank reply": ("  \n\n ", ""),
}

HOSTILE = {
    "raw script": ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
    "html tags in text": ("<b>not bold</b>", "&lt;b&gt;not bold&lt;/b&gt;"),
    "html block": ("<div>\nx\n</div>", "&lt;div&gt;\nx\n&lt;/div&gt;"),
    "unbalanced bold": ("**never closed", "**never closed"),
    "unbalanced code": ("`open and *x*", "`open and <i>x</i>"),
    "ampersands": ("a & b &amp; c &copy; &#60;", "a &amp; b &amp; c © &lt;"),
    "quotes in a link target": (
        '[x](https://x.io/?q="a"&b=<c>)',
        '<a href="https://x.io/?q=%22a%22&amp;b=%3Cc%3E">x</a>',
    ),
    "quotes in an angle-bracket target": (
        '[x](<https://x.io/?q="a">)',
        '<a href="https://x.io/?q=%22a%22">x</a>',
    ),
    "javascript link": ("[click](javascript:alert(1))", "[click](javascript:alert(1))"),
    "javascript autolink": ("<javascript:alert(1)>", "&lt;javascript:alert(1)&gt;"),
    "data image": (
        "![x](data:text/html;base64,PHNjcmlwdD4=)",
        "![x](data:text/html;base64,PHNjcmlwdD4=)",
    ),
    "ftp link is text": ("[f](ftp://x.io/f)", "f (ftp://x.io/f)"),
    "html comment": ("<!-- hidden -->", "&lt;!-- hidden --&gt;"),
}


@pytest.mark.parametrize(("markdown", "expected"), RENDERED.values(), ids=RENDERED.keys())
def test_markdown_renders_as_telegram_html(markdown: str, expected: str) -> None:
    assert markdown_to_html(markdown) == expected


@pytest.mark.parametrize(("markdown", "expected"), HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_markdown_reaches_the_user_as_text(markdown: str, expected: str) -> None:
    rendered = markdown_to_html(markdown)
    assert rendered == expected
    visible(rendered)  # and Telegram accepts it


def test_every_rendering_is_html_telegram_accepts() -> None:
    for markdown, _ in (*RENDERED.values(), *HOSTILE.values()):
        visible(markdown_to_html(markdown))


@pytest.mark.parametrize(
    "markdown",
    [
        "> " * 25 + "deep\n\nafter the quote",
        "- " * 25 + "deep\n\nafter the list",
        "".join("  " * i + "- item\n" for i in range(30)) + "\nafter the list",
    ],
    ids=["quotes", "list markers", "nested items"],
)
def test_markdown_nested_too_deep_is_sent_as_written_and_nothing_is_lost(markdown: str) -> None:
    rendered = markdown_to_html(markdown)
    assert "after the" in visible(rendered)
    assert visible(rendered) == markdown.strip()


def test_emphasis_ten_thousand_deep_is_written_once() -> None:
    rendered = markdown_to_html("*" * 10_000 + "deep" + "*" * 10_000 + " after")
    assert rendered == "<b>deep</b> after"  # 5,000 pairs of ** around one word


def test_nesting_a_model_would_write_is_rendered() -> None:
    rendered = markdown_to_html("> " * 5 + "**a *b ~~c~~***")
    assert rendered == "<blockquote><b>a <i>b <s>c</s></i></b></blockquote>"
