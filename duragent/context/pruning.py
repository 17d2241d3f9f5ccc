"""Pruning old tool outputs at render time (seed 000, tier 2): markers instead of stale output.

A tool output the model read twenty turns ago rarely matters word for word any more, yet it
costs as much as it did then, in every request. Pruning replaces old outputs with a one-line
marker *in the request only*: ``events.jsonl`` and the session's window keep every output, so
turning pruning off (or a larger window) brings them back.

It runs on the whole history before Layer 2 (``render.fit_request``, step 5). Layer 2 sends
the whole history when it fits at these carried sizes — the sizes the summaries tier counts
(``context.summary_plan``), so a history under its trigger is never cut — and otherwise
chooses by full size and sends what it chose as carried (below). The rule is a pure
function of the messages, the policy and the counter, so a render with the session's
``HistoryCache`` and one without give the same request:

- Candidates: every tool result in the history (the current turn is never pruned: Layer 3b
  handles it), except results of ``protected_tools`` (found by the call that made them).
- Let ``T`` be their total cost and ``S_i`` where candidate ``i`` starts in the running
  total, oldest first. With ``M = minimum × ⌊(T − protect) / minimum⌋`` (0 while
  ``T − protect < minimum``), the candidates with ``S_i < M`` are pruned, except the newest,
  provided that saves at least ``minimum`` tokens (the markers' cost deducted) — otherwise
  none is.

So an output stays only when it lies wholly within the newest ``T − M`` tokens of outputs
(``protect ≤ T − M < protect + minimum``), or is the newest: as seed 000 counts an output
into the protected span only while the running total stays within it, the output that
crosses the span's edge is pruned. (Keeping it, as this rule first did, let one capped
output beside the span double what every request carried: two 8,000-token outputs at 32K,
more than the summaries tier's whole trigger.) The newest output, the one the model read
last, stays whatever its size. The pruned set grows in steps of ``minimum`` tokens of output,
as the seed's batches of at least 20K do (the seed stores what it pruned; anchoring the
steps at the start of the history gives batches without stored state). A result already
smaller than its marker is left alone.

Why the whole history is pruned first: Layer 2 used to choose by full size and prune only
what it chose, so a history the requests carried easily was judged by sizes no request
carried: one heavy turn (six capped outputs) outgrew the budget and the next turn had to
summarise or leave history out (``specs/202612051200.summary-cadence.md``). Why Layer 2
still chooses by full size once some history must go: filling the room pruning frees with
older conversation costs the tokens pruning is there to save (seed 000's point, and a small
local model's, seed 003: quality drops as the window fills) — measured without summaries,
requests then cost 11–14 % *more* than with no pruning at all (``bench/README.md``, "Issue
38: summary cadence (session 17)"). Remembering what left the window is the summaries
tier's job.

The marker keeps the call visible (the model still sees what it asked) and says how large
the output was; when the output had been cut by Layer 3a and saved in full, the marker keeps
the saved id so the model can read it back with the ``tool_output`` tool.
"""

from __future__ import annotations

import operator
import weakref
from dataclasses import dataclass, field
from itertools import compress, repeat
from itertools import count as counting

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
    replaced: dict[int, Message] = field(default_factory=dict)
    """``id`` of each replaced result → its marker."""

    @property
    def markers(self) -> frozenset[int]:
        """``id`` of each marker in ``messages``."""
        return frozenset(id(m) for m in self.replaced.values())


_ROLE = operator.attrgetter("role")


def _unprotected(history: list[Message], protected: frozenset[str]) -> list[int]:
    """The tool results whose call (named before them) is not of a ``protected`` tool."""
    names: dict[str, str] = {}
    candidates: list[int] = []
    for i, message in enumerate(history):
        role = message.role
        if role is Role.TOOL:
            if names.get(message.tool_call_id or "") not in protected:
                candidates.append(i)
        elif role is Role.ASSISTANT and message.tool_calls:
            for call in message.tool_calls:
                names[call.id] = call.name
    return candidates


def prune_history(history: list[Message], policy: PrunePolicy, counter: TokenCounter) -> Pruned:
    """``history`` with its old tool outputs replaced by markers (module docstring).

    Returns ``history`` itself (the same list) when nothing is pruned.
    """
    protected = policy.protected_tools
    # the tool results' places, found in C (it runs before every request, over the history)
    tools = map(operator.is_, map(_ROLE, history), repeat(Role.TOOL))
    candidates = list(compress(counting(), tools))
    if protected and candidates:
        candidates = _unprotected(history, protected)
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
    start = 0  # where the candidate starts in the running total
    newest = candidates[-1]
    for i, size in zip(candidates, sizes, strict=True):
        if start >= bound or i == newest:
            break
        start += size
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
    return Pruned(out, len(chosen), saved, {id(history[i]): m for i, m in chosen})
