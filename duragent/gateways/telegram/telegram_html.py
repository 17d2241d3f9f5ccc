"""Telegram's HTML subset: which tags exist, how text is escaped, how long a text is.

Telegram's ``parse_mode=HTML`` accepts a handful of tags and four entities, and rejects the
whole message ("can't parse entities") on anything else: an unknown tag, an unclosed one, a
bare ``&``. Every piece of the Telegram front end that writes or cuts HTML goes through this
module, so that one place decides what is allowed.

``lex`` reads HTML into balanced pieces (an open tag, text, a close tag) and repairs what
Telegram would refuse or drop: unknown tags and stray end tags become text, elements left
open are closed, and tags that may not stand where they are (inside code, a blockquote in a
blockquote, a link in a link) lose their tags and keep their text. The splitter works on
those pieces, so it can cut anywhere in the text and never inside a tag or an entity.
Lengths are counted as Telegram counts them: UTF-16 code units of the visible text (tags
removed, entities decoded), so an emoji outside the BMP costs two.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from functools import lru_cache

#: Telegram's limit on a text message, in characters of visible text after entity parsing.
TELEGRAM_TEXT_LIMIT = 4096

#: Tags Telegram's HTML parse mode accepts (https://core.telegram.org/bots/api#html-style).
ALLOWED_TAGS = frozenset(
    {
        "b",
        "strong",
        "i",
        "em",
        "u",
        "ins",
        "s",
        "strike",
        "del",
        "span",
        "tg-spoiler",
        "tg-emoji",
        "a",
        "code",
        "pre",
        "blockquote",
    }
)

_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)((?:\s[^<>]*)?)>")
_ATTRIBUTE = re.compile(r"""([A-Za-z-]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?""")
#: A code block's language as it may stand in ``<code class="language-…">``.
LANGUAGE_NAME = re.compile(r"[A-Za-z0-9_+#.-]{1,64}")
_EMOJI_ID = re.compile(r"[0-9]{1,32}")


@dataclass(frozen=True, slots=True)
class Open:
    """An element's start tag, written in canonical form.

    ``markup`` is empty for an element Telegram would not accept (``<a>`` without ``href``):
    its text stays, its tags go.
    """

    name: str
    markup: str

    @property
    def close(self) -> str:
        """The end tag matching ``markup`` (empty when ``markup`` is)."""
        return f"</{self.name}>" if self.markup else ""


@dataclass(frozen=True, slots=True)
class Close:
    """The end of the innermost open element."""

    name: str


#: A lexed piece: an open tag, a close tag, or visible (unescaped, non-empty) text.
Piece = Open | Close | str


def escape_text(text: str) -> str:
    """Escape visible text for Telegram HTML (``&``, ``<``, ``>``)."""
    return html.escape(text, quote=False)


def escape_attribute(value: str) -> str:
    """Escape an attribute value to sit between double quotes."""
    return html.escape(value, quote=True)


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units, the unit of Telegram's limits."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2  # a lone surrogate is one unit


def prefix_end(text: str, start: int, budget: int) -> int:
    """The largest ``stop`` with ``text[start:stop]`` at most ``budget`` UTF-16 units long."""
    stop = min(len(text), start + budget)
    while (over := utf16_len(text[start:stop]) - budget) > 0:
        stop -= (over + 1) // 2  # each code point is one or two units: halves the excess
    units = budget + over
    while stop < len(text) and units + (step := _units(text[stop])) <= budget:
        units += step
        stop += 1
    return stop


def _units(character: str) -> int:
    return 2 if ord(character) > 0xFFFF else 1


def visible_text(markup: str) -> str:
    """The text a Telegram client shows for ``markup``: tags removed, entities decoded."""
    return "".join(piece for piece in lex(markup) if isinstance(piece, str))


def lex(markup: str) -> list[Piece]:
    """Read Telegram HTML into balanced pieces (see the module docstring for the repairs)."""
    pieces: list[Piece] = []
    stack: list[Open] = []
    text_start = 0
    for match in _TAG.finditer(markup):
        closing, name, attributes = match.groups()
        name = name.lower()
        if name not in ALLOWED_TAGS or (closing and not _is_open(name, stack)):
            continue  # an unknown tag or a stray end tag: shown as the text it is
        if text := html.unescape(markup[text_start : match.start()]):
            pieces.append(text)
        text_start = match.end()
        if closing:
            while stack:  # closes the elements left open inside this one, too
                inner = stack.pop()
                pieces.append(_CLOSE[inner.name])
                if inner.name == name:
                    break
        else:
            stack.append(_nested(_open(name, attributes), stack))
            pieces.append(stack[-1])
    if text := html.unescape(markup[text_start:]):
        pieces.append(text)
    pieces.extend(_CLOSE[element.name] for element in reversed(stack))
    return pieces


def _is_open(name: str, stack: list[Open]) -> bool:
    return bool(stack) and (stack[-1].name == name or any(e.name == name for e in stack))


def _nested(element: Open, stack: list[Open]) -> Open:
    """``element`` as Telegram would show it inside ``stack``.

    Nothing is formatted inside code (but the code of a ``<pre>``), a blockquote does not
    nest, nor does a link, and a language belongs to the code of a ``<pre>`` only. Tags that
    Telegram would drop are dropped here (their text stays), so the output follows the rules.
    """
    written = [open_.name for open_ in stack if open_.markup]
    inside = written[-1] if written else ""
    if inside == "code" or (inside == "pre" and element.name != "code"):
        return _transparent(element.name)
    if element.name in ("blockquote", "a") and element.name in written:
        return _transparent(element.name)
    if element.name == "code" and inside != "pre":
        return _open("code", "")
    return element


@lru_cache(maxsize=len(ALLOWED_TAGS))
def _transparent(name: str) -> Open:
    return Open(name, "")


_CLOSE = {name: Close(name) for name in ALLOWED_TAGS}


@lru_cache(maxsize=1024)
def _open(name: str, raw_attributes: str) -> Open:
    return Open(name, _start_tag(name, raw_attributes))


def _start_tag(name: str, raw_attributes: str) -> str:
    """The canonical start tag for ``name``, keeping only the attributes Telegram reads."""
    attributes = {
        key.lower(): html.unescape(next((v for v in values if v), ""))
        for key, *values in _ATTRIBUTE.findall(raw_attributes)
    }
    if name == "a":
        href = attributes.get("href", "").strip()
        return f'<a href="{escape_attribute(href)}">' if href else ""
    if name == "code":
        css_class = attributes.get("class", "")
        language = css_class.removeprefix("language-")
        if language != css_class and LANGUAGE_NAME.fullmatch(language):
            return f'<code class="{css_class}">'
        return "<code>"
    if name == "span":
        return '<span class="tg-spoiler">' if attributes.get("class") == "tg-spoiler" else ""
    if name == "tg-emoji":
        emoji_id = attributes.get("emoji-id", "")
        return f'<tg-emoji emoji-id="{emoji_id}">' if _EMOJI_ID.fullmatch(emoji_id) else ""
    if name == "blockquote" and "expandable" in attributes:
        return "<blockquote expandable>"
    return f"<{name}>"
