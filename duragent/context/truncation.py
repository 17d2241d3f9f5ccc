r"""Layer 3a: cap one tool result at ``max_tool_result_tokens``, keeping head, tail or both.

The cut is made on character boundaries (Python strings index code points, so a multi-byte
UTF-8 sequence is never split) and lone surrogate halves at the cut are dropped, so the result
always encodes. The indicator texts are the context-window spec's (``notices``):

- head: ``<start>\n\n[truncated: kept first ~8000 of ~52000 tokens (head)]``
- tail: ``[truncated: kept last ~8000 of ~52000 tokens (tail)]\n\n<end>``
- both: ``<start>\n\n[truncated: kept first+last ~8000 of ~52000 tokens (both)]\n\n<end>``
"""

from __future__ import annotations

from dataclasses import dataclass

from duragent.context.notices import Strategy, compose
from duragent.context.tokens import TiktokenCounter, TokenCounter

__all__ = ["Strategy", "Truncated", "fit_prefix", "fit_suffix", "truncate_tool_result"]


@dataclass(frozen=True, slots=True)
class Truncated:
    """The (possibly) shortened text and what happened."""

    text: str
    truncated: bool
    original_tokens: int
    kept_tokens: int


def _clean_edges(text: str) -> str:
    if text and 0xDC00 <= ord(text[0]) <= 0xDFFF:
        text = text[1:]
    if text and 0xD800 <= ord(text[-1]) <= 0xDBFF:
        text = text[:-1]
    return text


def fit_prefix(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """The longest prefix of ``text`` (by characters) with at most ``max_tokens`` tokens."""
    return _fit(text, max_tokens, counter, from_start=True)


def fit_suffix(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """The longest suffix of ``text`` (by characters) with at most ``max_tokens`` tokens."""
    return _fit(text, max_tokens, counter, from_start=False)


def _fit(text: str, max_tokens: int, counter: TokenCounter, *, from_start: bool) -> str:
    if max_tokens <= 0 or not text:
        return ""
    exact = counter.text
    if isinstance(exact, TiktokenCounter):
        tokens = exact.encode(text)
        if tokens is not None:
            return _slice_tokens(exact, tokens, max_tokens, from_start=from_start)
        # The tokenizer refused part of the text: search on characters with safe counts.
    total = counter.count_text(text)
    if total <= max_tokens:
        return text

    def piece(n: int) -> str:
        return _clean_edges(text[:n] if from_start else text[len(text) - n :])

    # Start from the proportional guess, then binary-search the exact boundary.
    guess = max(1, int(len(text) * max_tokens / total))
    lo, hi = 0, len(text)
    if counter.count_text(piece(guess)) <= max_tokens:
        lo = guess
        probe = min(len(text), int(guess * 1.1) + 1)
        hi = probe if counter.count_text(piece(probe)) > max_tokens else len(text)
    else:
        hi = guess
        probe = int(guess * 0.9)
        lo = probe if counter.count_text(piece(probe)) <= max_tokens else 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if counter.count_text(piece(mid)) <= max_tokens:
            lo = mid
        else:
            hi = mid
    return piece(lo)


def _slice_tokens(
    counter: TiktokenCounter, tokens: list[int], max_tokens: int, *, from_start: bool
) -> str:
    """The text of the first (or last) ``max_tokens`` tokens: one encode, no search.

    Re-encoding a slice can merge differently at the cut, so it is trimmed until it fits.
    """
    if max_tokens <= 0:
        return ""
    span = tokens[:max_tokens] if from_start else tokens[len(tokens) - max_tokens :]
    text = counter.decode_span(span)
    while text and counter.count_text(text) > max_tokens:
        text = text[:-1] if from_start else text[1:]
    return _clean_edges(text)


def truncate_tool_result(
    content: str,
    max_tokens: int,
    strategy: Strategy,
    counter: TokenCounter,
    saved: str | None = None,
) -> Truncated:
    """Cap ``content`` at about ``max_tokens`` tokens using ``strategy`` (see module docstring).

    ``saved``: the id the full output is kept under when it is cut; the indicator names it.
    """
    exact = counter.text
    # None also when the tokenizer refuses the text: then cut by characters (counting is safe).
    tokens = exact.encode(content) if isinstance(exact, TiktokenCounter) else None
    original = len(tokens) if tokens is not None else counter.count_text(content)
    if original <= max_tokens:
        return Truncated(content, False, original, original)

    def fit(text: str, limit: int, *, from_start: bool) -> str:
        if tokens is not None and isinstance(exact, TiktokenCounter):
            return _slice_tokens(exact, tokens, limit, from_start=from_start)
        return (fit_prefix if from_start else fit_suffix)(text, limit, counter)

    head = tail = ""
    if strategy == "head":
        head = fit(content, max_tokens, from_start=True)
    elif strategy == "tail":
        tail = fit(content, max_tokens, from_start=False)
    else:
        half = max(1, max_tokens // 2)
        head = fit(content, half, from_start=True)
        tail = fit(content, max_tokens - half, from_start=False)
    text = compose(strategy, head, tail, max_tokens, original, saved)
    return Truncated(text, True, original, counter.count_text(text))
