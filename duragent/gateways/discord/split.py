"""A reply as Discord messages: at most 2,000 characters each, never cut inside a code block.

Discord renders Markdown itself, so a reply is sent as the model wrote it; only its length
needs care. A message holds at most 2,000 characters. Length is measured here in UTF-16 code
units, which is never less than the count of code points, so a chunk fits whichever way the
platform counts (an emoji-heavy reply just splits a little earlier).

The reply is read as a sequence of prose and fenced code blocks (```` ```lang ```` … ```` ``` ````
or ``~~~``). Blocks are packed into messages whole when they fit. Prose too long for one
message is cut at the last paragraph break, else line break, else space before the limit
(a hard cut only for a single word longer than a message). A code block too long for one
message is split between its lines into several blocks, each closed and reopened with the
same fence and language, so every message renders its code as code; a single line longer
than a message is cut. An unclosed fence (a reply cut short) runs to the end, as Discord
shows it, and is closed in each message when it has to be split.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["DISCORD_TEXT_LIMIT", "split_message", "text_units"]

DISCORD_TEXT_LIMIT = 2000

_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")


def text_units(text: str) -> int:
    """``text``'s length in UTF-16 code units (what a 2,000-character limit is checked in)."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


@dataclass(frozen=True, slots=True)
class _Block:
    text: str
    """The block as written (a code block with its fences)."""
    opener: str | None = None
    """A code block's first line (fence and language), without its newline."""
    body: str = ""
    """A code block's lines between the fences."""
    closer: str | None = None
    """A code block's closing fence (``None``: the block was never closed)."""


def _blocks(text: str) -> list[_Block]:
    """``text`` as prose and fenced code blocks, in order (joined, they are ``text``)."""
    blocks: list[_Block] = []
    prose: list[str] = []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        opened = _FENCE.match(lines[i].rstrip("\r\n"))
        if opened is None:
            prose.append(lines[i])
            i += 1
            continue
        fence = opened["fence"]
        end = next(
            (
                j
                for j in range(i + 1, len(lines))
                if lines[j].strip().startswith(fence) and set(lines[j].strip()) == {fence[0]}
            ),
            None,
        )
        if prose:
            blocks.append(_Block("".join(prose)))
            prose = []
        last = len(lines) if end is None else end + 1
        body_lines = lines[i + 1 : last if end is None else end]
        body = "".join(body_lines).removesuffix("\n").removesuffix("\r")
        closer = None if end is None else lines[end].strip()
        blocks.append(_Block("".join(lines[i:last]), lines[i].rstrip("\r\n"), body, closer))
        i = last
    if prose:
        blocks.append(_Block("".join(prose)))
    return blocks


def _fit(text: str, limit: int) -> int:
    """How many characters of ``text`` fit in ``limit`` units."""
    used = 0
    for index, ch in enumerate(text):
        used += 2 if ord(ch) > 0xFFFF else 1
        if used > limit:
            return index
    return len(text)


def _cut_prose(text: str, limit: int) -> list[str]:
    """Prose in pieces of at most ``limit`` units, cut where a reader would pause."""
    pieces: list[str] = []
    while text_units(text) > limit:
        room = _fit(text, limit)
        head = text[:room]
        cut = max(head.rfind("\n\n"), 0) or max(head.rfind("\n"), 0) or max(head.rfind(" "), 0)
        if cut <= 0:
            cut = room  # one word longer than a message
        pieces.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    pieces.append(text)
    return [piece.strip("\n") + "\n" for piece in pieces if piece.strip()]  # each ends its line


def _cut_code(block: _Block, limit: int) -> list[str]:
    """A code block as several blocks of at most ``limit`` units, split between lines."""
    opener = block.opener or "```"
    closer = block.closer or opener.strip()[:3]
    if closer[0] != opener.strip()[0]:
        closer = opener.strip()[0] * 3
    room = limit - text_units(opener) - text_units(closer) - 2  # the two newlines
    if room <= 0:
        raise ValueError(f"a limit of {limit} leaves no room inside a code block")
    pieces: list[str] = []
    current = ""
    for line in block.body.split("\n"):
        while text_units(line) > room:  # a line longer than a message: cut it
            head = line[: _fit(line, room)]
            if current:
                pieces.append(current)
                current = ""
            pieces.append(head)
            line = line[len(head) :]
        joined = f"{current}\n{line}" if current else line
        if current and text_units(joined) > room:
            pieces.append(current)
            current = line
        else:
            current = joined
    if current or not pieces:
        pieces.append(current)
    return [f"{opener}\n{piece}\n{closer}\n" for piece in pieces]  # the fence ends its line


def split_message(text: str, limit: int = DISCORD_TEXT_LIMIT) -> list[str]:
    """``text`` as messages of at most ``limit`` units; no code block spans two messages.

    A blank reply gives no message. Joined, the messages show what ``text`` shows (the
    whitespace where a message ends is dropped, and a split code block gains fences).
    """
    if not text.strip():
        return []
    if text_units(text) <= limit:
        return [text.strip("\n")]
    chunks: list[str] = []
    current = ""
    for block in _blocks(text):
        if text_units(block.text) <= limit:
            pieces = [block.text]
        elif block.opener is None:
            pieces = _cut_prose(block.text, limit)
        else:
            pieces = _cut_code(block, limit)
        for piece in pieces:
            if text_units(current + piece) <= limit:
                current += piece
                continue
            if current.strip():
                chunks.append(current.strip("\n").rstrip())
            current = piece
    if current.strip():
        chunks.append(current.strip("\n").rstrip())
    return chunks
