"""Model replies, written in Markdown, as Telegram HTML.

Models answer in CommonMark-ish Markdown; Telegram shows a small HTML subset
(``telegram_html``). markdown-it-py parses (CommonMark, plus GitHub's tables and
strikethrough; specs/202611240300.telegram-rendering.md says why this parser) and this module
writes its token stream in the subset, in one pass with an explicit stack (no recursion, so
no nesting depth can overflow Python's stack). What has no Telegram counterpart is written
as text: headings become a bold line, list items "• " or "1. " lines, tables a monospace
``<pre>`` block, images a link, a rule a line of dashes. Raw HTML in the reply is never
parsed as HTML (the parser's ``html`` option is off), so ``<script>`` or ``<b>`` reach the
user as the characters the model wrote, escaped.

A link is a link only for ``http``, ``https``, ``mailto`` and ``tg`` targets; any other target
(a relative path, ``ftp:``) is shown after the link text, and markdown-it refuses
``javascript:``, ``vbscript:``, ``file:`` and ``data:`` targets outright (the source stays text).
Telegram's nesting rules are kept where they matter: no blockquote inside a blockquote, no
code inside a link, no style twice around the same text.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.token import Token

from duragent.gateways.telegram.telegram_html import (
    LANGUAGE_NAME,
    escape_attribute,
    escape_text,
)

# The html rules are disabled as well as switched off by the option: they cost a third of
# the parse time and would only hand back text.
_PARSER = (
    MarkdownIt("commonmark", {"html": False})
    .enable(["table", "strikethrough"])
    .disable(["html_block", "html_inline"])
)
_LINK_SCHEMES = ("http://", "https://", "mailto:", "tg://")
_STYLES = {"strong_open": "b", "em_open": "i", "s_open": "s"}
_STYLE_ENDS = frozenset({"strong_close", "em_close", "s_close"})
_BULLETS = ("•", "◦", "▪")
_RULE = "——————————"
_CONTAINERS = frozenset({"blockquote_open", "list_item_open"})


@dataclass(slots=True)
class _Frame:
    """A container being written: the document, a quote, a list, a list item, a table."""

    kind: str
    separator: str  # between two blocks in it
    started: bool = False  # a block has been written in it
    tag: str = ""  # the tag it opened, closed with it
    number: int = 0  # an ordered list's next number
    rows: list[list[str]] = field(default_factory=list)  # a table's cells, as text
    alignments: list[str] = field(default_factory=list)


def markdown_to_html(markdown: str) -> str:
    """Telegram HTML for ``markdown`` (empty for a blank reply)."""
    tokens = _PARSER.parse(markdown)
    if _too_deep(tokens):
        return escape_text(markdown.strip())
    return _Writer().write(tokens).strip()


def _too_deep(tokens: list[Token]) -> bool:
    """Whether markdown-it dropped part of the reply, which is then sent as written.

    Past ``maxNesting`` (20) markdown-it stops parsing a container and skips the rest of the
    reply after it: a quote 20 deep would lose everything that follows.
    """
    deepest = _PARSER.options["maxNesting"] - 1
    return any(t.type in _CONTAINERS and t.level >= deepest for t in tokens)


class _Writer:
    """Writes a block token stream; one instance per reply."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.frames = [_Frame("document", "\n\n")]
        self._in_heading = False

    def write(self, tokens: list[Token]) -> str:
        for token in tokens:
            self._token(token)
        return "".join(self.out)

    def _token(self, token: Token) -> None:
        kind = token.type
        frame = self.frames[-1]
        if frame.kind == "table":
            self._table_token(token, frame)
        elif kind == "inline":
            self.out.append(_inline(token.children or [], heading=self._in_heading))
        elif kind in ("paragraph_open", "heading_open"):
            self._begin_block()
            self._in_heading = kind == "heading_open"
            if self._in_heading:
                self.out.append("<b>")
        elif kind == "heading_close":
            self._in_heading = False
            self.out.append("</b>")
        elif kind == "blockquote_open":
            self._begin_block()
            quoted = any(f.kind == "quote" for f in self.frames)
            self._push(_Frame("quote", "\n\n", tag="" if quoted else "blockquote"))
        elif kind in ("bullet_list_open", "ordered_list_open"):
            self._begin_block()
            start = int(token.attrs.get("start", 1))
            self._push(_Frame(kind.removesuffix("_open"), "\n", number=start))
        elif kind == "list_item_open":
            self._begin_block()
            self.out.append(self._item_marker(frame))
            self.frames.append(_Frame("item", "\n"))
        elif kind in ("fence", "code_block"):
            self._begin_block()
            self.out.append(_code_block(token.content, token.info))
        elif kind == "hr":
            self._begin_block()
            self.out.append(_RULE)
        elif kind == "table_open":
            self._begin_block()
            self.frames.append(_Frame("table", ""))
        elif kind in ("blockquote_close", "bullet_list_close", "ordered_list_close"):
            self._pop()
        elif kind == "list_item_close":
            self.frames.pop()
        elif kind == "html_block":
            self._begin_block()
            self.out.append(escape_text(token.content.strip()))

    def _begin_block(self) -> None:
        frame = self.frames[-1]
        if frame.started:
            self.out.append(frame.separator)
        frame.started = True

    def _push(self, frame: _Frame) -> None:
        if frame.tag:
            self.out.append(f"<{frame.tag}>")
        self.frames.append(frame)

    def _pop(self) -> None:
        frame = self.frames.pop()
        if frame.tag:
            self.out.append(f"</{frame.tag}>")

    def _item_marker(self, frame: _Frame) -> str:
        depth = sum(f.kind in ("bullet_list", "ordered_list") for f in self.frames) - 1
        if frame.kind == "ordered_list":
            marker = f"{frame.number}."
            frame.number += 1
        else:
            marker = _BULLETS[min(depth, len(_BULLETS) - 1)]
        return f"{'  ' * depth}{marker} "

    def _table_token(self, token: Token, table: _Frame) -> None:
        kind = token.type
        if kind == "tr_open":
            table.rows.append([])
        elif kind in ("th_open", "td_open") and len(table.rows) == 1:
            table.alignments.append(str(token.attrs.get("style", "")))
        elif kind == "inline":
            cell = _inline(token.children or [], text_only=True)
            table.rows[-1].append(html.unescape(cell))
        elif kind == "table_close":
            self.frames.pop()
            self.out.append(_table(table.rows, table.alignments))


def _code_block(code: str, info: str) -> str:
    body = escape_text(code.removesuffix("\n"))
    language = info.split(maxsplit=1)[0] if info.strip() else ""
    if LANGUAGE_NAME.fullmatch(language):
        return f'<pre><code class="language-{language}">{body}</code></pre>'
    return f"<pre>{body}</pre>"


def _table(rows: list[list[str]], alignments: list[str]) -> str:
    """A table as aligned monospace columns; cell formatting is dropped, text is kept."""
    columns = max((len(row) for row in rows), default=0)
    widths = [max(len(row[c]) if c < len(row) else 0 for row in rows) for c in range(columns)]
    lines = [_table_row(row, widths, alignments) for row in rows]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    text = "\n".join(lines)
    return f"<pre>{escape_text(text)}</pre>"


def _table_row(cells: list[str], widths: list[int], alignments: list[str]) -> str:
    padded = []
    for column, width in enumerate(widths):
        cell = cells[column] if column < len(cells) else ""
        alignment = alignments[column] if column < len(alignments) else ""
        if alignment.endswith("right"):
            padded.append(cell.rjust(width))
        elif alignment.endswith("center"):
            padded.append(cell.center(width))
        else:
            padded.append(cell.ljust(width))
    return " | ".join(padded).rstrip()


def _inline(tokens: list[Token], heading: bool = False, text_only: bool = False) -> str:
    """Inline tokens as Telegram HTML (``text_only``: escaped text, no tags: a table cell)."""
    out: list[str] = []
    active = {"b"} if heading else set()  # styles open around the text being written
    styles: list[str] = []  # per open style token: its tag, or "" where it is not written
    links: list[_Link] = []  # the links open around the text being written
    for token in tokens:
        kind = token.type
        if kind in ("text", "text_special", "html_inline"):
            out.append(escape_text(token.content))
        elif kind in ("softbreak", "hardbreak"):
            out.append(" " if text_only else "\n")
        elif kind == "code_inline":
            code = escape_text(token.content)
            out.append(code if text_only or links else f"<code>{code}</code>")
        elif kind in _STYLES:
            tag = "" if text_only or _STYLES[kind] in active else _STYLES[kind]
            styles.append(tag)
            if tag:
                active.add(tag)
                out.append(f"<{tag}>")
        elif kind in _STYLE_ENDS:
            tag = styles.pop() if styles else ""
            if tag:
                active.discard(tag)
                out.append(f"</{tag}>")
        elif kind == "link_open":
            target = str(token.attrs.get("href", ""))
            if text_only or links:
                links.append(_Link(len(out)))
            elif target.lower().startswith(_LINK_SCHEMES):
                out.append(f'<a href="{escape_attribute(target)}">')
                links.append(_Link(len(out), end_tag="</a>"))
            else:
                links.append(_Link(len(out), shown_target=target))
        elif kind == "link_close" and links:
            out.append(_link_end(links.pop(), out))
        elif kind == "image":
            out.append(_image(str(token.attrs.get("src", "")), token.content, text_only, links))
    return "".join(out)


@dataclass(frozen=True, slots=True)
class _Link:
    """A link being written: where its text starts in the output, and how it ends."""

    start: int
    end_tag: str = ""  # "</a>" for a link Telegram shows as one
    shown_target: str = ""  # a target not linked, shown after the text


def _link_end(link: _Link, out: list[str]) -> str:
    target = link.shown_target
    if not target or html.unescape("".join(out[link.start :])) == target:
        return link.end_tag
    return f" ({escape_text(target)})"


def _image(source: str, alt: str, text_only: bool, links: list[_Link]) -> str:
    label = escape_text(alt or "image")
    if text_only or links or not source.lower().startswith(_LINK_SCHEMES):
        return label if text_only or links or not source else f"{label} ({escape_text(source)})"
    return f'<a href="{escape_attribute(source)}">{label}</a>'
