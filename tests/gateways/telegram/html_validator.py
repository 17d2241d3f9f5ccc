"""An independent reading of Telegram HTML, for tests: is it what Telegram accepts, and what
text does a client show?

Written on ``html.parser`` rather than on ``telegram_html.lex`` so that the renderer's own
lexer is not the judge of its own output. Stricter than Telegram where our output should be:
no self-closing tags, no comments, only the four named entities, no raw ``<``/``>``/bare
``&`` in text, nothing nested inside code, no blockquote in a blockquote.
"""

from __future__ import annotations

import re
from html import unescape
from html.parser import HTMLParser

from duragent.gateways.telegram.telegram_html import ALLOWED_TAGS, utf16_len

_ATTRIBUTES = {
    "a": {"href"},
    "code": {"class"},
    "span": {"class"},
    "blockquote": {"expandable"},
    "tg-emoji": {"emoji-id"},
}
_ENTITY = re.compile(r"&(?:lt|gt|amp|quot|#[0-9]+|#x[0-9a-fA-F]+);")
_TAG = re.compile(r"</?[a-z-]+(?:\s[^<>]*)?>")


class InvalidTelegramHtml(AssertionError):
    """The markup would be refused by Telegram (or breaks a rule of our own output)."""


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.stack: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def fail(self, why: str) -> None:
        raise InvalidTelegramHtml(f"{why} (open: {[name for name, _ in self.stack]})")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ALLOWED_TAGS:
            self.fail(f"<{tag}> is not a Telegram tag")
        names = [name for name, _ in self.stack]
        attributes = dict(attrs)
        if set(attributes) - _ATTRIBUTES.get(tag, set()):
            self.fail(f"<{tag}> has attributes Telegram ignores: {attributes}")
        if tag == "a" and not attributes.get("href"):
            self.fail("<a> without href")
        language = str(attributes.get("class", "language-"))
        if tag == "code" and (
            not language.startswith("language-")
            or ("class" in attributes and names[-1:] != ["pre"])
        ):
            self.fail(f"<code {attributes}>: a language outside <pre>, or not a language")
        if names and names[-1] == "code":
            self.fail(f"<{tag}> inside <code>")
        if names and names[-1] == "pre" and tag != "code":
            self.fail(f"<{tag}> inside <pre>")
        if tag == "blockquote" and "blockquote" in names:
            self.fail("blockquote inside a blockquote")
        self.stack.append((tag, attributes))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.fail(f"self-closing <{tag}/>")

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1][0] != tag:
            self.fail(f"</{tag}> does not close the innermost element")
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def handle_entityref(self, name: str) -> None:
        if name not in ("lt", "gt", "amp", "quot"):
            self.fail(f"&{name}; is not one of Telegram's entities")
        self.text.append(unescape(f"&{name};"))

    def handle_charref(self, name: str) -> None:
        self.text.append(unescape(f"&#{name};"))

    def handle_comment(self, data: str) -> None:
        self.fail("a comment")

    def handle_decl(self, decl: str) -> None:
        self.fail("a declaration")

    def handle_pi(self, data: str) -> None:
        self.fail("a processing instruction")

    def unknown_decl(self, data: str) -> None:
        self.fail("a CDATA or other declaration")


def visible(markup: str) -> str:
    """The text a Telegram client shows for ``markup``; raises if Telegram would refuse it."""
    bare = _ENTITY.sub("", _TAG.sub("", markup))
    for character in "<>&":
        if character in bare:
            raise InvalidTelegramHtml(f"raw {character!r} in text: {markup!r}")
    reader = _Reader()
    reader.feed(markup)
    reader.close()
    if reader.stack:
        raise InvalidTelegramHtml(f"unclosed {[name for name, _ in reader.stack]}: {markup!r}")
    return "".join(reader.text)


def visible_length(markup: str) -> int:
    """Telegram's measure of a message: UTF-16 units of its visible text."""
    return utf16_len(visible(markup))
