"""Telegram's ``parse_mode=HTML``, as the fake Bot API server needs it: visible text and entities.

A chat gateway renders model output to Telegram HTML; the ways that goes wrong in production
(a bare ``<`` in "a < b", a ``<br>`` or ``<p>`` the model invented, a tag left open by a message
split in the middle) are answered by Telegram with 400 "Bad Request: can't parse entities". The
fake server must refuse the same texts, or a gateway's plain-text fallback is never exercised,
and it must count the length of the *visible* text, because that is what the 4096 limit
applies to. The error details imitate Telegram's wording (byte offsets into the UTF-8 text).

Accepted, as documented by the Bot API: ``b strong i em u ins s strike del tg-spoiler
span class="tg-spoiler" a href code pre blockquote[expandable] tg-emoji``; ``pre`` may hold one
``code class="language-x"`` naming the language. Entities: ``&lt; &gt; &amp; &quot;`` and
numeric ones; any other ``&`` is kept literally, as Telegram does.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EntityParseError", "ParsedText", "parse_html", "utf16_len"]

_ENTITY_TYPES = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "tg-spoiler": "spoiler",
    "span": "spoiler",
    "a": "text_link",
    "code": "code",
    "pre": "pre",
    "blockquote": "blockquote",
    "tg-emoji": "custom_emoji",
}
_NAMED_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
_ENTITY = re.compile(r"&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z]+);")
_TAG_NAME = re.compile(r"[a-zA-Z][a-zA-Z0-9-]*")
_ATTRIBUTE = re.compile(
    r"\s*([a-zA-Z-]+)(?:\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s\"'>]+)))?", re.ASCII
)


class EntityParseError(ValueError):
    """The text is not valid Telegram HTML; ``str(error)`` is the detail Telegram would give."""


@dataclass
class ParsedText:
    """What the recipient sees: the text without markup, and the formatting as entities."""

    text: str
    entities: list[dict[str, Any]] = field(default_factory=list)


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, the unit of Telegram's entity offsets and lengths."""
    return len(text.encode("utf-16-le")) // 2


def _byte_offset(source: str, index: int) -> int:
    return len(source[:index].encode("utf-8"))


def _unescape(fragment: str) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name.startswith("#"):
            return html.unescape(match.group(0))
        return _NAMED_ENTITIES.get(name, match.group(0))

    return _ENTITY.sub(one, fragment)


@dataclass
class _Open:
    name: str
    attributes: dict[str, str]
    offset: int  # UTF-16 offset into the visible text
    byte_offset: int


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.pieces: list[str] = []
        self.visible_utf16 = 0
        self.stack: list[_Open] = []
        self.entities: list[dict[str, Any]] = []

    def emit(self, raw: str) -> None:
        text = _unescape(raw)
        if text:
            self.pieces.append(text)
            self.visible_utf16 += utf16_len(text)

    def run(self) -> ParsedText:
        source, position = self.source, 0
        while True:
            start = source.find("<", position)
            if start < 0:
                self.emit(source[position:])
                break
            self.emit(source[position:start])
            end = source.find(">", start)
            if end < 0:
                raise EntityParseError(
                    f"Unclosed start tag at byte offset {_byte_offset(source, start)}"
                )
            if source.startswith("</", start):
                self.end_tag(source[start + 2 : end].strip(), start)
            else:
                self.start_tag(source[start + 1 : end], start)
            position = end + 1
        if self.stack:
            raise EntityParseError(
                f'Can\'t find end tag corresponding to start tag "{self.stack[-1].name}"'
            )
        self.entities.sort(key=lambda e: (e["offset"], -e["length"]))
        return ParsedText("".join(self.pieces), self.entities)

    def start_tag(self, body: str, index: int) -> None:
        at = _byte_offset(self.source, index)
        name_match = _TAG_NAME.match(body)
        name = name_match.group(0).lower() if name_match else ""
        if name not in _ENTITY_TYPES:
            shown = name or body[:1]
            raise EntityParseError(f'Unsupported start tag "{shown}" at byte offset {at}')
        rest = body[len(name) :].rstrip("/")
        attributes: dict[str, str] = {}
        for match in _ATTRIBUTE.finditer(rest):
            value = match.group(2) or match.group(3) or match.group(4) or ""
            attributes[match.group(1).lower()] = _unescape(value)
        if name == "span" and attributes.get("class") != "tg-spoiler":
            raise EntityParseError(f'Tag "span" must have class "tg-spoiler" at byte offset {at}')
        if self.stack and self.stack[-1].name in ("pre", "code") and name != "code":
            raise EntityParseError(
                f'Tag "{name}" is not allowed inside "{self.stack[-1].name}" at byte offset {at}'
            )
        self.stack.append(_Open(name, attributes, self.visible_utf16, at))

    def end_tag(self, name: str, index: int) -> None:
        at = _byte_offset(self.source, index)
        name = name.lower()
        if not self.stack:
            raise EntityParseError(f"Unexpected end tag at byte offset {at}")
        opened = self.stack[-1]
        if opened.name != name:
            raise EntityParseError(
                f'Unmatched end tag at byte offset {at}, expected "</{opened.name}>", '
                f'found "</{name}>"'
            )
        self.stack.pop()
        self.add_entity(opened)

    def add_entity(self, opened: _Open) -> None:
        length = self.visible_utf16 - opened.offset
        inside_pre = bool(self.stack) and self.stack[-1].name == "pre"
        if opened.name == "code" and inside_pre:
            language = opened.attributes.get("class", "")
            if language.startswith("language-"):
                self.stack[-1].attributes["language"] = language[len("language-") :]
            return
        if length <= 0:
            return  # Telegram drops empty entities
        entity: dict[str, Any] = {
            "type": _ENTITY_TYPES[opened.name],
            "offset": opened.offset,
            "length": length,
        }
        if opened.name == "a":
            href = opened.attributes.get("href")
            if not href:
                return  # an <a> without a link is plain text
            entity["url"] = href
        elif opened.name == "pre" and "language" in opened.attributes:
            entity["language"] = opened.attributes["language"]
        elif opened.name == "blockquote" and "expandable" in opened.attributes:
            entity["type"] = "expandable_blockquote"
        elif opened.name == "tg-emoji":
            entity["custom_emoji_id"] = opened.attributes.get("emoji-id", "")
        self.entities.append(entity)


def parse_html(source: str) -> ParsedText:
    """Parse Telegram HTML into visible text and entities; ``EntityParseError`` if invalid."""
    return _Parser(source).run()
