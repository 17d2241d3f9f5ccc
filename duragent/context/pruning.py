"""Pruning old tool outputs at render time (seed 000, tier 2): markers instead of stale output.

A tool output the model read twenty turns ago rarely matters word for word any more, yet it
costs as much as it did then, in every request. Pruning replaces old outputs with a one-line
marker *in the request only*: ``events.jsonl`` and the session's window keep every output, so
turning pruning off (or a larger window) brings them back.

It runs on the history Layer 2 chose to send (``render.fit_request``, step 6), so the request
carries the same conversation for fewer tokens, and the session's ``HistoryCache`` is never
involved. The rule is a pure function of those messages, the policy and the counter, so a render
with the cache and one without give the same request:

- Candidates: every tool result in the chosen history (the current turn is never pruned:
  Layer 3b handles it), except results of ``protected_tools`` (found by the call that made
  them).
- Let ``T`` be their total cost and ``P_i`` the running total, oldest first. With
  ``M = minimum × ⌊(T − protect) / minimum⌋`` (0 while ``T − protect < minimum``), the
  candidates with ``P_i ≤ M`` are pruned, provided that saves at least ``minimum`` tokens
  (the markers' cost deducted) — otherwise none is.

So the newest ``protect`` tokens of outputs are never pruned (``T − M ≥ protect``), and the
pruned set grows in steps of ``minimum`` tokens of output, as the seed's batches of at least
20K do (the seed stores what it pruned; anchoring the steps at the start of what is sent gives
batches without stored state). A result already smaller than its marker is left alone.

Why prune what is sent instead of pruning first and letting Layer 2 fill the room it frees:
the second sends *more* old conversation for the same tokens (the benchmark measured +2.5 %
to +5 % tokens per session), while seed 000's point, and a small local model's need (seed
003: quality drops as the window fills), is fewer tokens. Remembering what left the window is
the summaries tier's job.

The marker keeps the call visible (the model still sees what it asked) and says how large
the output was; when the output had been cut by Layer 3a and saved in full, the marker keeps
the saved id so the model can read it back with the ``tool_output`` tool.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from duragent.context.notices import read_cut, saved_suffix
from duragent.context.tokens import TokenCounter
from duragent.core.messages import Message, Role

__all__ = ["PrunePolicy", "Pruned", "prune_history", "pruned_notice"]


@dataclass(frozen=True, slots=True)
class PrunePolicy:
    """How much recent tool output is protected and how much a prune must save."""

    protect: int
    minimum: int
    protected_tools: frozenset[str] = field(default_factory=frozenset)


def pruned_notice(tokens: int, saved: str | None = None) -> str:
    """What a pruned tool result reads."""
    return f"[old tool output pruned from the context: ~{tokens} tokens{saved_suffix(saved)}]"


# One marker per original message (and counter): counted once, reused by every request.
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


@dataclass(frozen=True, slots=True)
class Pruned:
    """What pruning did to a list of messages."""

    messages: list[Message]
    count: int  # results replaced by a marker
    saved: int  # tokens saved (the markers' cost deducted)


def prune_history(history: list[Message], policy: PrunePolicy, counter: TokenCounter) -> Pruned:
    """``history`` with its old tool outputs replaced by markers (module docstring).

    Returns ``history`` itself (the same list) when nothing is pruned.
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
    unchanged = Pruned(history, 0, 0)
    if not candidates:
        return unchanged
    count = counter.count_message
    sizes = [count(history[i]) for i in candidates]
    minimum = max(1, policy.minimum)
    steps = (sum(sizes) - policy.protect) // minimum
    if steps <= 0:
        return unchanged
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
        return unchanged
    out = list(history)
    for i, marker in chosen:
        out[i] = marker
    return Pruned(out, len(chosen), saved)
