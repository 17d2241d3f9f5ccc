"""What the Telegram gateway sends: a reply or an approval prompt as ready-made messages.

Pure functions, no SDK: the gateway calls ``render_chunks`` on a model's reply and sends
each chunk with ``parse_mode=HTML``; when Telegram answers 400 "can't parse entities" for
one, it sends that chunk's ``plain`` without a parse mode (the same visible text, so it fits
the same limit). A blank reply renders to no chunk at all: nothing is sent.

A reply's chunks are handed to the kit as ``RenderedPiece``s (``TelegramOutbound.pieces``), so
that ``Delivery`` can send and record them one by one: each is the chunk's HTML, and
``message_chunks`` sends it as that one chunk instead of reading it as Markdown again (which
would escape its tags and show them).
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
    "RenderedPiece",
    "markdown_to_html",
    "message_chunks",
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


class RenderedPiece(str):
    """One message of a rendered reply: the chunk's HTML as a string, its ``chunk`` kept.

    A ``str`` so the kit handles it as the text of a message (``OutboundPort.pieces``), its
    own type so the port knows it is ready to send (``message_chunks``).
    """

    chunk: RenderedChunk

    def __new__(cls, chunk: RenderedChunk) -> RenderedPiece:
        """The piece of ``chunk``: its HTML, the chunk kept for sending."""
        piece = super().__new__(cls, chunk.html)
        piece.chunk = chunk
        return piece


def message_chunks(text: str) -> list[RenderedChunk]:
    """The messages ``text`` goes out as (none for a blank text).

    A ``RenderedPiece`` is the one message it is. Markdown is rendered, or shown as written
    when it shows nothing ("[](url)", "#", an empty code block): the model said something,
    and Telegram refuses an empty message.
    """
    if isinstance(text, RenderedPiece):
        return [text.chunk]
    return render_chunks(text) or render_text_chunks(text)


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
