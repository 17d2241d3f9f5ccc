"""Pruning old tool outputs at render time (seed 000, tier 2): markers instead of stale output.

A tool output the model read twenty turns ago rarely matters word for word any more, yet it
costs as much as it did then, and Layer 2 fills the history budget newest first, so every old
output pushes out conversation (what the user asked, what the agent decided). Pruning replaces
old outputs with a one-line marker *in the request only*: ``events.jsonl`` and the session's
window keep every output, so turning pruning off (or a larger window) brings them back.

The rule is a pure function of the history, the policy and the counter, so a render with the
session's ``HistoryCache`` and one without give the same request (the cache's oracle tests):

- Candidates: every tool result in the history (the current turn is never pruned: Layer 3b
  handles it), except results of ``protected_tools`` (found by the call that made them).
- Let ``T`` be their total cost and ``P_i`` the running total, oldest first. With
  ``M = minimum × ⌊(T − protect) / minimum⌋`` (0 while ``T − protect < minimum``), the
  candidates with ``P_i ≤ M`` are pruned, provided that saves at least ``minimum`` tokens
  (the markers' cost deducted) — otherwise none is.

So the newest ``protect`` tokens of outputs are never pruned (``T − M ≥ protect``), and the
pruned set grows in steps of ``minimum`` tokens of output: the seed prunes in batches of at
least 20K (it stores what it pruned); anchoring the steps at the start of the window gives
the same batches without stored state. Between steps the request's older part is unchanged,
so the session's ``HistoryCache`` keeps its units (a step, or the Layer 1 window sliding past
a step, re-splits the history once). A result already smaller than its marker is left alone.

The marker keeps the call visible (the model still sees what it asked) and says how large
the output was; when the output had been cut by Layer 3a and saved in full, the marker keeps
the saved id so the model can read it back with the ``tool_output`` tool.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

from duragent.context.notices import read_cut
from duragent.context.tokens import TokenCounter
from duragent.core.messages import Message, Role

__all__ = ["PrunePolicy", "pruned_notice", "prune_history"]


@dataclass(frozen=True, slots=True)
class PrunePolicy:
    """How much recent tool output is protected and how much a prune must save."""

    protect: int
    minimum: int
    protected_tools: frozenset[str] = field(default_factory=frozenset)


def pruned_notice(tokens: int, saved: str | None = None) -> str:
    """What a pruned tool result reads."""
    text = f"[old tool output pruned from the context: ~{tokens} tokens]"
    if saved is not None:
        text = text[:-1] + f"; full output saved as {saved}, read it with tool_output]"
    return text


# One marker per original message (and counter), so an unchanged prune gives the very same
# message objects from request to request and the history cache carries over.
_markers: weakref.WeakKeyDictionary[Message, tuple[str, Message]] = weakref.WeakKeyDictionary()


def _marker(message: Message, counter: TokenCounter, tokens: int) -> Message:
    cached = _markers.get(message)
    if cached is not None and cached[0] == counter.name:
        return cached[1]
    cut = read_cut(message.text)
    size = cut.original if cut is not None else tokens
    saved = cut.saved if cut is not None else None
    marker = Message.tool(message.tool_call_id or "", pruned_notice(size, saved))
    _markers[message] = (counter.name, marker)
    return marker


def prune_history(
    history: Sequence[Message], policy: PrunePolicy, counter: TokenCounter
) -> tuple[Sequence[Message], int]:
    """``history`` with its old tool outputs replaced by markers, and how many were.

    Returns ``history`` itself (the same object) when nothing is pruned.
    """
    protected = policy.protected_tools
    names: dict[str, str] = {}
    candidates: list[int] = []
    for i, message in enumerate(history):
        role = message.role
        if role is Role.TOOL:
            if protected and names.get(message.tool_call_id or "") in protected:
                continue
            candidates.append(i)
        elif protected and role is Role.ASSISTANT and message.tool_calls:
            for call in message.tool_calls:
                names[call.id] = call.name
    if not candidates:
        return history, 0
    count = counter.count_message
    sizes = [count(history[i]) for i in candidates]
    total = sum(sizes)
    minimum = max(1, policy.minimum)
    steps = (total - policy.protect) // minimum
    if steps <= 0:
        return history, 0
    bound = steps * minimum
    chosen: list[tuple[int, Message]] = []
    saved = 0
    running = 0
    for i, size in zip(candidates, sizes, strict=True):
        running += size
        if running > bound:
            break
        marker = _marker(history[i], counter, size)
        gain = size - count(marker)
        if gain > 0:
            chosen.append((i, marker))
            saved += gain
    if saved < policy.minimum or not chosen:
        return history, 0
    out = list(history)
    for i, marker in chosen:
        out[i] = marker
    return out, len(chosen)
