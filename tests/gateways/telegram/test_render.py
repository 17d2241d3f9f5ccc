"""A model's reply becomes Telegram messages: HTML that parses, and plain text to fall back
on, each within Telegram's limit; an approval prompt is one message."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from duragent.gateways.telegram.markdown_html import markdown_to_html
from duragent.gateways.telegram.render import (
    TELEGRAM_TEXT_LIMIT,
    render_approval_prompt,
    render_chunks,
    render_text_chunks,
)
from duragent.gateways.telegram.telegram_html import utf16_len
from tests.gateways.telegram.html_validator import visible

FRAGMENTS = st.sampled_from(
    [
        "**",
        "*",
        "_",
        "__",
        "~~",
        "`",
        "```python\n",
        "```\n",
        "\n```\n",
        "# ",
        "## ",
        "- ",
        "1. ",
        "> ",
        "    ",
        "\n",
        "\n\n",
        " ",
        "word",
        "x" * 40,
        "é",
        "😀",
        "👍🏽",
        "<b>",
        "</i>",
        "<script>",
        "&",
        "&amp;",
        "&lt;",
        '"',
        '[link](https://x.io/?a="1")',
        "[js](javascript:alert(1))",
        "![img](https://x.io/i.png)",
        "<https://x.io>",
        "---\n",
        "| a | b |\n|---|---|\n| c | **d** |\n",
    ]
)
MARKDOWN = st.one_of(
    st.lists(FRAGMENTS, max_size=60).map("".join),
    st.text(max_size=300),
)
LIMITS = st.integers(min_value=2, max_value=160)


def squeeze(text: str) -> str:
    return "".join(text.split())


@settings(max_examples=200, deadline=None)
@given(markdown=MARKDOWN, limit=LIMITS)
def test_every_message_parses_fits_and_falls_back_to_the_same_text(
    markdown: str, limit: int
) -> None:
    for chunk in render_chunks(markdown, limit):
        shown = visible(chunk.html)
        assert utf16_len(shown) <= limit
        assert shown.strip()
        assert chunk.plain == shown


@settings(max_examples=200, deadline=None)
@given(markdown=MARKDOWN, limit=LIMITS)
def test_the_messages_together_show_the_whole_reply(markdown: str, limit: int) -> None:
    whole = visible(markdown_to_html(markdown))
    chunks = render_chunks(markdown, limit)
    assert squeeze("".join(chunk.plain for chunk in chunks)) == squeeze(whole)


def test_a_short_reply_is_one_message() -> None:
    [chunk] = render_chunks("Hello **there** & <you>")
    assert chunk.html == "Hello <b>there</b> &amp; &lt;you&gt;"
    assert chunk.plain == "Hello there & <you>"


def test_a_blank_reply_is_no_message() -> None:
    assert render_chunks(" \n\n\t") == []


def test_text_that_is_not_markdown_is_shown_as_written() -> None:
    [chunk] = render_text_chunks("Error: *not* <b>bold</b> & `x`")
    assert chunk.html == "Error: *not* &lt;b&gt;bold&lt;/b&gt; &amp; `x`"
    assert chunk.plain == "Error: *not* <b>bold</b> & `x`"


def test_long_plain_text_is_split_like_a_reply() -> None:
    chunks = render_text_chunks("word " * 2000)
    assert [utf16_len(chunk.plain) <= TELEGRAM_TEXT_LIMIT for chunk in chunks] == [True] * 3
    assert render_text_chunks("") == []


def test_a_long_code_block_is_cut_into_code_blocks_of_the_same_language() -> None:
    code = "\n".join(f"print({n})" for n in range(1000))
    chunks = render_chunks(f"Here:\n\n```python\n{code}\n```\n\nDone.")
    assert len(chunks) >= 3
    opening = '<pre><code class="language-python">'
    assert chunks[0].html.startswith("Here:\n\n" + opening)
    for chunk in chunks:
        assert utf16_len(chunk.plain) <= TELEGRAM_TEXT_LIMIT
    for chunk in chunks[1:-1]:
        assert chunk.html.startswith(opening)
        assert chunk.html.endswith("</code></pre>")
    assert chunks[-1].html.endswith("</code></pre>\n\nDone.")
    assert "".join(chunk.plain for chunk in chunks).count("print(") == 1000


def test_the_approval_prompt_shows_the_command_as_code() -> None:
    prompt = render_approval_prompt("rm -rf /tmp/x && echo '<done>'")
    assert prompt.html == (
        "Command requires approval:\n<pre>rm -rf /tmp/x &amp;&amp; echo '&lt;done&gt;'</pre>"
    )
    assert prompt.plain == "Command requires approval:\nrm -rf /tmp/x && echo '<done>'"
    assert visible(prompt.html) == prompt.plain


def test_a_long_command_is_cut_with_a_marker_that_says_how_much() -> None:
    command = "echo " + "😀" * 5000
    prompt = render_approval_prompt(command)
    assert utf16_len(visible(prompt.html)) <= TELEGRAM_TEXT_LIMIT
    assert prompt.plain == visible(prompt.html)
    assert "</pre>\n… [command cut here: " in prompt.html  # outside the code block
    shown = prompt.plain.removeprefix("Command requires approval:\n")
    kept, marker = shown.split("\n… ")
    assert command.startswith(kept)
    assert marker == f"[command cut here: {len(command) - len(kept)} more characters not shown]"
    assert len(kept) > 1900  # the room is used, not thrown away


def test_a_command_that_fits_exactly_is_not_cut() -> None:
    room = TELEGRAM_TEXT_LIMIT - len("Command requires approval:\n")
    prompt = render_approval_prompt("x" * room)
    assert "cut here" not in prompt.plain
    assert utf16_len(prompt.plain) == TELEGRAM_TEXT_LIMIT


def test_an_empty_command_is_the_header_alone() -> None:
    prompt = render_approval_prompt("")
    assert (prompt.html, prompt.plain) == (
        "Command requires approval:",
        "Command requires approval:",
    )
