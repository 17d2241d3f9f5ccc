"""What the Telegram gateway sends: a reply or an approval prompt as ready-made messages.

Pure functions, no SDK: the gateway calls ``render_chunks`` on a model's reply and sends
each chunk with ``parse_mode=HTML``; when Telegram answers 400 "can't parse entities" for
one, it sends that chunk's ``plain`` without a parse mode (the same visible text, so it fits
the same limit). A blank reply renders to no chunk at all: nothing is sent.
"""

from __future__ import annotations

from duragent.gateways.telegram.html_split import RenderedChunk, split_html, split_pieces
from duragent.gateways.telegram.markdown_html import markdown_to_html
from duragent.gateways.telegram.telegram_html import (
    TELEGRAM_TEXT_LIMIT,
    escape_text,
    lex,
    prefix_end,
    utf16_len,
)

__all__ = [
    "TELEGRAM_TEXT_LIMIT",
    "RenderedChunk",
    "markdown_to_html",
    "render_approval_prompt",
    "render_chunks",
    "render_text_chunks",
    "split_html",
]

APPROVAL_HEADER = "Command requires approval:"


def render_chunks(markdown: str, limit: int = TELEGRAM_TEXT_LIMIT) -> list[RenderedChunk]:
    """``markdown`` as Telegram messages of at most ``limit`` UTF-16 units of visible text."""
    return split_pieces(lex(markdown_to_html(markdown)), limit)


def render_text_chunks(text: str, limit: int = TELEGRAM_TEXT_LIMIT) -> list[RenderedChunk]:
    """``text`` shown exactly as written (no Markdown): notices, errors, echoed input."""
    return split_pieces([text] if text else [], limit)


def render_approval_prompt(command: str, limit: int = TELEGRAM_TEXT_LIMIT) -> RenderedChunk:
    """The prompt sent with the Allow / Deny buttons: the header, then the command.

    The command is a code block. A command too long for one message is cut, and a line
    after the block says how much is not shown (the buttons go with one message, so the
    prompt is never split).
    """
    head = f"{APPROVAL_HEADER}\n"
    if not command:
        return RenderedChunk(APPROVAL_HEADER, APPROVAL_HEADER)
    room = limit - utf16_len(head)
    if utf16_len(command) <= room:
        return RenderedChunk(f"{head}<pre>{escape_text(command)}</pre>", head + command)
    room -= utf16_len(_cut_marker(len(command)))  # the longest marker it can need
    if room <= 0:
        raise ValueError(f"a limit of {limit} units leaves no room for the command")
    kept = command[: prefix_end(command, 0, room)]
    marker = _cut_marker(len(command) - len(kept))
    return RenderedChunk(f"{head}<pre>{escape_text(kept)}</pre>{marker}", head + kept + marker)


def _cut_marker(hidden: int) -> str:
    """Said after the code block, outside it, so it is not read as part of the command."""
    return f"\n… [command cut here: {hidden} more characters not shown]"
