"""Where a request sent on the wire carries text: system text, or quoted user-role context.

Issue 33's rule (``specs/202612050100.authority-follows-the-author.md``): text written by
people, tools or a summary never travels in a system message; it arrives in a user-role
message that starts with ``QUOTED_HEADER``, every line behind ``> ``. These read the body the
scripted model server recorded, in either wire format (OpenAI's ``messages`` with system
messages among them, Anthropic's separate ``system`` and user turns of content blocks).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from duragent.context.quoting import QUOTED_HEADER, RUNTIME_NOTE, quote

__all__ = ["assert_quoted", "quoted_texts", "spoken", "system_texts"]


def _text(content: Any) -> list[str]:
    """A message's texts: a string, or a list of content blocks (Anthropic)."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [str(b.get("text", "")) for b in content if b.get("type") == "text"]
    return []


def system_texts(body: Mapping[str, Any]) -> list[str]:
    """Every text the request gives system authority."""
    texts = [t for m in body["messages"] if m["role"] == "system" for t in _text(m["content"])]
    if "system" in body:  # Anthropic: one separate field
        texts.extend(_text(body["system"]))
    return texts


def quoted_texts(body: Mapping[str, Any]) -> list[str]:
    """The texts of user-role messages (or content blocks) the runtime marked as quoted."""
    return [
        t
        for m in body["messages"]
        if m["role"] == "user"
        for t in _text(m["content"])
        if t.startswith(QUOTED_HEADER)
    ]


def spoken(messages: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The contents of the user messages people sent (the quoted blocks left out)."""
    return [
        m["content"]
        for m in messages
        if m["role"] == "user" and not str(m["content"]).startswith(QUOTED_HEADER)
    ]


def assert_quoted(body: Mapping[str, Any], written: str) -> None:
    """``written`` (a person's, a tool's or a summary's text) arrives quoted, never as system.

    The system text, when a block is quoted, ends with the runtime's note saying so.
    """
    for line in written.splitlines():
        if line.strip():
            assert all(line not in s for s in system_texts(body)), (line, system_texts(body))
    assert any(quote(written) in q for q in quoted_texts(body)), (written, body["messages"])
    assert any(RUNTIME_NOTE in s for s in system_texts(body)), system_texts(body)
