r"""The notices a cut tool result carries, written and read back in one place.

Layer 3a writes the context-window spec's indicator into the stored result:

- head: ``<start>\n\n[truncated: kept first ~8000 of ~52000 tokens (head)]``
- tail: ``[truncated: kept last ~8000 of ~52000 tokens (tail)]\n\n<end>``
- both: ``<start>\n\n[truncated: kept first+last ~8000 of ~52000 tokens (both)]\n\n<end>``

A later cut of the same result (shrinking it to fit a small window, or masking it) reads the
indicator back so the model is still told the ORIGINAL size: the result is re-cut with the
same strategy and carries exactly one indicator, with the original size and the new kept size
(issue 14 item 3: the second cut used to slice the first notice away and report only the
already-truncated size). Only an indicator at the exact place 3a puts it is read back, so a
tool output merely quoting one is taken as plain text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["Cut", "Strategy", "compose", "indicator", "read_cut", "removed_notice"]

Strategy = Literal["head", "tail", "both"]

_WHERE: dict[Strategy, str] = {"head": "first", "tail": "last", "both": "first+last"}
_INDICATOR = re.compile(
    r"\[truncated: kept (?:first|last|first\+last) ~(\d+) of ~(\d+) tokens \((head|tail|both)\)\]"
)


@dataclass(frozen=True, slots=True)
class Cut:
    """A result that was already cut: what is left of it, and its size before any cut."""

    head: str  # kept text before the indicator ("" for tail)
    tail: str  # kept text after the indicator ("" for head)
    original: int
    strategy: Strategy


def indicator(strategy: Strategy, kept: int, original: int) -> str:
    """The spec's indicator text for a result of ``original`` tokens cut to ``kept``."""
    return f"[truncated: kept {_WHERE[strategy]} ~{kept} of ~{original} tokens ({strategy})]"


def compose(strategy: Strategy, head: str, tail: str, kept: int, original: int) -> str:
    """The kept pieces around the indicator, laid out as the spec says."""
    note = indicator(strategy, kept, original)
    if strategy == "head":
        return f"{head}\n\n{note}"
    if strategy == "tail":
        return f"{note}\n\n{tail}"
    return f"{head}\n\n{note}\n\n{tail}"


def removed_notice(original: int) -> str:
    """What a result reads when nothing of it could be kept."""
    return f"[result removed to fit the context window: kept ~0 of ~{original} tokens]"


def read_cut(text: str) -> Cut | None:
    """The cut ``text`` records, if it carries a 3a indicator where 3a puts it."""
    if text.startswith("[truncated: "):
        found = _INDICATOR.match(text)
        if found and found[3] == "tail" and text[found.end() : found.end() + 2] == "\n\n":
            return Cut("", text[found.end() + 2 :], int(found[2]), "tail")
    if text.endswith("(head)]"):
        start = text.rfind("\n\n[truncated: ")
        found = _INDICATOR.fullmatch(text, start + 2) if start >= 0 else None
        if found and found[3] == "head":
            return Cut(text[:start], "", int(found[2]), "head")
    for found in _INDICATOR.finditer(text):
        before, after = text[: found.start()], text[found.end() :]
        if found[3] == "both" and before.endswith("\n\n") and after.startswith("\n\n"):
            return Cut(before[:-2], after[2:], int(found[2]), "both")
    return None
