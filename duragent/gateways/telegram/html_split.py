"""Cut Telegram HTML into messages that each fit Telegram's limit and parse on their own.

A reply longer than one message is sent as several, and each must be valid HTML by itself:
an element open at a cut is closed at the end of one message and opened again (same tag,
same attributes, so a code block keeps its language) at the start of the next. Cuts fall
only in visible text (the pieces of ``telegram_html.lex``), and text is escaped again when
written, so no cut lands inside a tag or an entity.

Where to cut, best first: a paragraph break, a line break, a space, anywhere. A break is
taken when it leaves the message at least half full; otherwise the best break there is,
otherwise a hard cut (a 10,000-character word still splits). The whitespace at a cut is
dropped, except the indentation after a line break, which belongs to the next line (code).
A message starts at its first visible character (or the indentation of its first line) and
ends at its last; empty elements are not written; whitespace alone is never a message.

The work is linear in the input: prefix sums of the text lengths find where a message
overflows by binary search, and the breaks are found backwards with ``str.rfind`` over at
most one message of text.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate

from duragent.gateways.telegram.telegram_html import (
    TELEGRAM_TEXT_LIMIT,
    Open,
    Piece,
    escape_text,
    lex,
    prefix_end,
    utf16_len,
)

#: Breaks in order of preference: the text to look for.
_BREAKS = ("\n\n", "\n", " ")
_NON_SPACE = re.compile(r"\S")
_GLUE = frozenset({"\u200d", "\ufe0e", "\ufe0f"})  # ZWJ and variation selectors


@dataclass(frozen=True, slots=True)
class RenderedChunk:
    """One message: its HTML (for ``parse_mode=HTML``) and its visible text.

    ``plain`` is what to send without a parse mode when Telegram refuses the HTML ("can't
    parse entities"); it is exactly the text a client shows for ``html``, so it fits the
    same limit. (Link targets are not part of the visible text, so the fallback loses them.)
    """

    html: str
    plain: str


@dataclass(frozen=True, slots=True)
class _Cut:
    """Where a message ends and where the next one starts (piece index, offset in it)."""

    end: tuple[int, int]
    resume: tuple[int, int]


def split_html(markup: str, limit: int = TELEGRAM_TEXT_LIMIT) -> list[str]:
    """Split Telegram HTML into messages of at most ``limit`` UTF-16 units of visible text."""
    return [chunk.html for chunk in split_pieces(lex(markup), limit)]


def split_pieces(pieces: list[Piece], limit: int = TELEGRAM_TEXT_LIMIT) -> list[RenderedChunk]:
    """Split lexed pieces into messages; see the module docstring for where cuts fall."""
    if limit < 2:
        raise ValueError(f"limit must be at least 2 UTF-16 units (one emoji), not {limit}")
    measure = _Measure(pieces, limit)
    chunks: list[RenderedChunk] = []
    stack: list[Open] = []
    start = (0, 0)
    while (begin := measure.content_start(start)) is not None:
        cut = measure.next_cut(begin)
        if cut.resume <= begin:  # cannot happen with limit >= 2; a loop forever would be worse
            raise AssertionError(f"the splitter made no progress at {begin}")
        chunk, stack = _write(pieces, stack, start, begin, cut.end)
        if chunk.plain.strip():
            chunks.append(chunk)
        start = cut.resume
    return chunks


class _Measure:
    """Finds each message's cut.

    ``before[k]`` is the visible length of ``pieces[:k]``, so where a message overflows is a
    binary search, and only the text around a cut is read.
    """

    def __init__(self, pieces: list[Piece], limit: int) -> None:
        self.pieces = pieces
        self.limit = limit
        units = [utf16_len(p) if isinstance(p, str) else 0 for p in pieces]
        self.before = list(accumulate(units, initial=0))
        self.text_end = self._text_end()

    def content_start(self, start: tuple[int, int]) -> tuple[int, int] | None:
        """Where the next message's text begins (None if only whitespace is left).

        The whitespace after ``start`` is skipped, except the indentation of the first line.
        """
        content = self._first_content(start, (len(self.pieces), 0))
        if content is None:
            return None
        index, position = content
        first = start[1] if index == start[0] else 0
        newline = self._text(index).rfind("\n", first, position)
        return (index, newline + 1 if newline >= 0 else first)

    def _text_end(self) -> tuple[int, int]:
        """Just after the last visible non-whitespace character (trailing space is not sent)."""
        for index in range(len(self.pieces) - 1, -1, -1):
            piece = self.pieces[index]
            if isinstance(piece, str) and piece.strip():
                return (index, len(piece.rstrip()))
        return (0, 0)

    def next_cut(self, start: tuple[int, int]) -> _Cut:
        """The cut after ``start``, or the end of the pieces if the rest fits."""
        index, offset = start
        base = self.before[index] + (utf16_len(self._text(index)[:offset]) if offset else 0)
        if self.before[-1] - base <= self.limit:
            return _Cut(self.text_end, (len(self.pieces), 0))
        last = bisect_right(self.before, base + self.limit) - 1  # the piece that overflows
        last_start = offset if last == index else 0
        room = base + self.limit - max(self.before[last], base)
        overflow = prefix_end(self._text(last), last_start, room)
        return self._choose(start, base, (last, overflow))

    def _choose(self, start: tuple[int, int], base: int, overflow: tuple[int, int]) -> _Cut:
        """The best break between ``start`` and ``overflow``, else a hard cut there."""
        first_content = self._first_content(start, overflow)
        fallback: _Cut | None = None
        for needle in _BREAKS:
            found = self._last_break(start, overflow, needle, first_content)
            if found is None:
                continue
            cut, position = found
            if self._units_between(base, start, position) >= self.limit // 2:
                return cut
            fallback = fallback or cut
        if fallback is not None:
            return fallback
        index, stop = overflow
        first = start[1] if index == start[0] else 0
        stop = _grapheme_boundary(self._text(index), first, stop)
        return _Cut((index, stop), (index, stop))

    def _spans(
        self, start: tuple[int, int], stop: tuple[int, int], backwards: bool
    ) -> Iterator[tuple[int, str, int, int]]:
        """The text pieces between ``start`` and ``stop``: (index, text, from, to)."""
        indexes = range(start[0], min(stop[0] + 1, len(self.pieces)))
        for index in reversed(indexes) if backwards else indexes:
            piece = self.pieces[index]
            if isinstance(piece, str):
                first = start[1] if index == start[0] else 0
                yield index, piece, first, stop[1] if index == stop[0] else len(piece)

    def _first_content(
        self, start: tuple[int, int], stop: tuple[int, int]
    ) -> tuple[int, int] | None:
        """Where the message's first non-whitespace character is, if it has one."""
        for index, text, first, end in self._spans(start, stop, backwards=False):
            found = _NON_SPACE.search(text, first, end)
            if found:
                return (index, found.start())
        return None

    def _last_break(
        self,
        start: tuple[int, int],
        stop: tuple[int, int],
        needle: str,
        first_content: tuple[int, int] | None,
    ) -> tuple[_Cut, tuple[int, int]] | None:
        """The last ``needle`` with content before it.

        Returns the cut there and where the message's text would end.
        """
        if first_content is None:
            return None
        for index, text, first, end in self._spans(start, stop, backwards=True):
            found = text.rfind(needle, first, end)
            if found < 0:
                continue
            run_start, run_end = found, found + len(needle)
            while run_start > first and text[run_start - 1].isspace():
                run_start -= 1
            while run_end < len(text) and text[run_end].isspace():
                run_end += 1
            if (index, run_start) <= first_content:
                return None  # only whitespace before it: every earlier break is the same
            newline = text.rfind("\n", run_start, run_end)
            resume = newline + 1 if newline >= 0 else run_end
            return _Cut((index, run_start), (index, resume)), (index, run_start)
        return None

    def _units_between(self, base: int, start: tuple[int, int], position: tuple[int, int]) -> int:
        index, offset = position
        first = start[1] if index == start[0] else 0
        before = max(self.before[index], base) - base
        return before + utf16_len(self._text(index)[first:offset])

    def _text(self, index: int) -> str:
        piece = self.pieces[index]
        assert isinstance(piece, str), f"piece {index} is not text"
        return piece


def _grapheme_boundary(text: str, start: int, stop: int) -> int:
    """Move a hard cut back off a combining mark or an emoji sequence's joiner.

    Best effort: a cut is never moved back to ``start``.
    """
    candidate = stop
    while start < candidate < len(text) and _glued(text, candidate):
        candidate -= 1
    return candidate if candidate > start else stop


def _glued(text: str, position: int) -> bool:
    following, preceding = text[position], text[position - 1]
    return (
        following in _GLUE
        or preceding == "\u200d"
        or unicodedata.combining(following) != 0
        or "\U0001f3fb" <= following <= "\U0001f3ff"  # skin tone modifiers
    )


def _write(
    pieces: list[Piece],
    stack: list[Open],
    start: tuple[int, int],
    begin: tuple[int, int],
    end: tuple[int, int],
) -> tuple[RenderedChunk, list[Open]]:
    """Write ``pieces`` from ``start`` to ``end`` as one message, the text from ``begin``.

    The elements open at ``start`` are opened again and those open at ``end`` are closed. A
    start tag is written only once text follows it, so a cut never leaves an empty element.
    Returns the message and the elements open at ``end``.
    """
    stack = list(stack)
    written = 0  # how many elements of the stack have their start tag in the output
    markup: list[str] = []
    plain: list[str] = []
    (first, _), (text_first, offset), (last, stop) = start, begin, end
    for index in range(first, min(last + 1, len(pieces))):
        piece = pieces[index]
        if isinstance(piece, str):
            if index < text_first:
                continue
            text = piece[offset if index == text_first else 0 : stop if index == last else None]
            if text:
                markup.extend(element.markup for element in stack[written:])
                written = len(stack)
                markup.append(escape_text(text))
                plain.append(text)
        elif index == last:
            break
        elif isinstance(piece, Open):
            stack.append(piece)
        else:
            element = stack.pop()
            if written > len(stack):
                markup.append(element.close)
                written = len(stack)
    markup.extend(element.close for element in reversed(stack[:written]))
    return RenderedChunk("".join(markup), "".join(plain)), stack
