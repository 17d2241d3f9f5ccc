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

The runtime's notice for tool calls a request leaves out (``calls_left_out_notice``) is here
too: like the others it says exactly what is missing and where the full record is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "SAVED_ID",
    "Cut",
    "Strategy",
    "calls_left_out_notice",
    "compose",
    "indicator",
    "read_cut",
    "removed_notice",
    "saved_suffix",
]

Strategy = Literal["head", "tail", "both"]

_WHERE: dict[Strategy, str] = {"head": "first", "tail": "last", "both": "first+last"}
SAVED_ID = r"out_[0-9A-HJKMNP-TV-Z]{26}"
"""What a saved full output's id looks like (``store.saved_outputs``)."""
_INDICATOR = re.compile(
    r"\[truncated: kept (?:first|last|first\+last) ~(\d+) of ~(\d+) tokens \((head|tail|both)\)"
    r"(?:; full output saved as (" + SAVED_ID + r"), read it with tool_output)?\]"
)


@dataclass(frozen=True, slots=True)
class Cut:
    """A result that was already cut: what is left of it, and its size before any cut."""

    head: str  # kept text before the indicator ("" for tail)
    tail: str  # kept text after the indicator ("" for head)
    original: int
    strategy: Strategy
    saved: str | None = None  # the id of the full output kept on disk, when it was saved


def indicator(strategy: Strategy, kept: int, original: int, saved: str | None = None) -> str:
    """The spec's indicator text for a result of ``original`` tokens cut to ``kept``.

    ``saved``: the id under which the full output was kept (``store.saved_outputs``); the
    indicator then tells the model how to read what was cut.
    """
    where = f"({strategy}){saved_suffix(saved)}"
    return f"[truncated: kept {_WHERE[strategy]} ~{kept} of ~{original} tokens {where}]"


def compose(
    strategy: Strategy, head: str, tail: str, kept: int, original: int, saved: str | None = None
) -> str:
    """The kept pieces around the indicator, laid out as the spec says."""
    note = indicator(strategy, kept, original, saved)
    if strategy == "head":
        return f"{head}\n\n{note}"
    if strategy == "tail":
        return f"{note}\n\n{tail}"
    return f"{head}\n\n{note}\n\n{tail}"


def saved_suffix(saved: str | None) -> str:
    """What every cut notice adds when the full output was saved: where to read it."""
    return "" if saved is None else f"; full output saved as {saved}, read it with tool_output"


def removed_notice(original: int, saved: str | None = None) -> str:
    """What a result reads when nothing of it could be kept."""
    return (
        f"[result removed to fit the context window: kept ~0 of ~{original} tokens"
        f"{saved_suffix(saved)}]"
    )


def calls_left_out_notice(calls: int, iterations: int) -> str:
    """The runtime's notice for a request that leaves out this turn's oldest iterations.

    Said exactly: a model told "some calls" cannot tell which of its calls still count, and
    one told nothing makes them again (issue 38 item 1). The records are on disk: the
    session's log keeps every call and result, and outputs Layer 3a cut are saved whole.
    """
    noun = "call" if calls == 1 else "calls"
    steps = "iteration" if iterations == 1 else "iterations"
    return (
        f"[tool calls left out — the first {calls} tool {noun} of this turn ({iterations} "
        f"{steps}) are not shown, to fit the context window; they ran, and their records are "
        "kept on disk with any saved outputs (tool_output reads saved outputs)]"
    )


def read_cut(text: str) -> Cut | None:
    """The cut ``text`` records, if it carries a 3a indicator where 3a puts it."""
    if text.startswith("[truncated: "):
        found = _INDICATOR.match(text)
        if found and found[3] == "tail" and text[found.end() : found.end() + 2] == "\n\n":
            return Cut("", text[found.end() + 2 :], int(found[2]), "tail", found[4])
    if text.endswith(("(head)]", "read it with tool_output]")):
        start = text.rfind("\n\n[truncated: ")
        found = _INDICATOR.fullmatch(text, start + 2) if start >= 0 else None
        if found and found[3] == "head":
            return Cut(text[:start], "", int(found[2]), "head", found[4])
    for found in _INDICATOR.finditer(text):
        before, after = text[: found.start()], text[found.end() :]
        if found[3] == "both" and before.endswith("\n\n") and after.startswith("\n\n"):
            return Cut(before[:-2], after[2:], int(found[2]), "both", found[4])
    return None
