"""Window tiers: the defaults that make a 4K local model work as well as a 200K cloud one.

Seed 003: one set of numbers cannot serve every window. A tool result capped at 8,000 tokens is
larger than a whole 8K request; pruning that protects the newest 40,000 tokens of outputs never
starts under a 20,000-token history budget; a 60-token preamble and long tool descriptions are
noise in a 32K window but a tenth of a 4K one. So the window picks a ``Tier`` and every default
the user did not set comes from it. Four tiers, by ``window`` (``max_input_tokens`` or the
model-name table):

==========  ============  ===========  =============  ==============  ===============  ===========
tier        window        tool result  prune protect  prune minimum   summaries        full prompt
==========  ============  ===========  =============  ==============  ===============  ===========
``2K``      < 4,000       25 % limit   20 % history   10 % history    70 %, keep 20 %  no
``4K``      4,000–7,999   30 % limit   20 % history   10 % history    70 %, keep 20 %  no
``8K``      8,000–31,999  35 % limit   30 % history   10 % history    70 %, keep 30 %  yes
``32K``     ≥ 32,000      35 % limit   20 % history   10 % history    70 %, keep 25 %  yes
==========  ============  ===========  =============  ==============  ===============  ===========

"summaries": from which share of the history budget old history is summarised, and how much
of it stays word for word, the latest message included (``bench/context/fitting.py`` (c) measured
these at 8K and 32K, ``bench/context/summary_cadence.py`` the turns between summaries). A small
window keeps less: what a summary leaves is ``threshold − keep`` away from the next one, and
at 4K a turn of two 130-token messages is a seventh of the budget (keeping 40 % meant a
summary every 2–3 turns; 20 % is one every 5). 30 % at 8K keeps an instruction given five
tool-heavy turns ago word for word (``tests/turns/test_intent_survival.py``).

Pruning works on the history a request carries (``context.pruning``), so its span must be a
small enough share of that history to ever leave something to prune: in a 4K window the
history holds two or three capped outputs, and protecting 20 % of it keeps the newest one.
And the protected span plus one step of pruning must fit between the summaries' low-water
mark and trigger (``threshold − keep``): the outputs a request still carries whole then never
force a summary on their own. At 32K the span was 40 % (8,000 of a 20,000-token budget,
one capped output, plus a step of 2,000): outputs alone passed the trigger and the tier
summarised every 2–3 tool-heavy turns; at 20 % it summarises every 8 or so, and table (c)
of ``bench/context/fitting.py`` spends fewer tokens, not more
(``specs/202612051200.summary-cadence.md``).
Every share is capped by the seeds' absolute values (tool results 8,000 tokens, prune protect
40,000, prune minimum 20,000), so a large window with a large history budget (200,000 and
more) gets exactly the seeds' numbers, and the 32K tier keeps the 8,000-token tool-result cap
agents had before.
"limit" is the request limit (window − reply reserve − 10 %); "history" is the history budget
(``min(limit, max_history_tokens)``). The boundaries are decimal (32,000 is 32K) so the common
``max_input_tokens: 32000`` lands where its writer expects.

The reply reserve is ``window.output_reserve`` (a quarter of the window, 256–4,096), which is
already tiered in effect: 1,024 at 4K, 2,048 at 8K, 4,096 from 16K up.

``summary_threshold`` (share of the history budget at which the summaries tier starts) and
``summary_tokens`` (the summary's target length) are read by the summaries tier; they live
here so one table holds every per-window default.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from duragent.context.window import output_reserve
from duragent.core.messages import ToolDefinition

__all__ = [
    "MAX_PRUNE_MINIMUM",
    "MAX_PRUNE_PROTECT",
    "MAX_TOOL_RESULT_TOKENS",
    "TIERS",
    "Tier",
    "compact_tools",
    "tier_for",
]

MAX_TOOL_RESULT_TOKENS = 8_000
MAX_PRUNE_PROTECT = 40_000  # seed 000's PRUNE_PROTECT
MAX_PRUNE_MINIMUM = 20_000  # seed 000's PRUNE_MINIMUM


@dataclass(frozen=True, slots=True)
class Tier:
    """The defaults of one window size class (module docstring)."""

    name: str  # "2K", "4K", "8K", "32K"
    label: str  # "2–4K", "4–8K", "8–32K", "32K+"
    min_window: int
    tool_result_share: float
    prune_protect_share: float
    prune_minimum_share: float
    summary_threshold: float
    summary_tokens: int
    summary_keep_recent: float
    full_prompt: bool

    def reply_reserve(self, window: int) -> int:
        """The default reply reserve for ``window`` (``window.output_reserve``)."""
        return output_reserve(None, window)

    def tool_result_tokens(self, limit: int) -> int:
        """Default Layer 3a cap: a share of the request limit, at most 8,000, at least 64."""
        return max(64, min(MAX_TOOL_RESULT_TOKENS, int(limit * self.tool_result_share)))

    def prune_protect(self, history_budget: int) -> int:
        """Default protected span of recent tool outputs (tokens)."""
        return min(MAX_PRUNE_PROTECT, int(history_budget * self.prune_protect_share))

    def prune_minimum(self, history_budget: int) -> int:
        """Default least saving (and step) of a prune (tokens), never below 64."""
        return max(64, min(MAX_PRUNE_MINIMUM, int(history_budget * self.prune_minimum_share)))


TIERS: tuple[Tier, ...] = (
    Tier("2K", "2–4K", 0, 0.25, 0.20, 0.10, 0.70, 256, 0.20, False),
    Tier("4K", "4–8K", 4_000, 0.30, 0.20, 0.10, 0.70, 512, 0.20, False),
    Tier("8K", "8–32K", 8_000, 0.35, 0.30, 0.10, 0.70, 1_024, 0.30, True),
    Tier("32K", "32K+", 32_000, 0.35, 0.20, 0.10, 0.70, 2_048, 0.25, True),
)


def tier_for(window: int) -> Tier:
    """The tier of a context window of ``window`` tokens."""
    chosen = TIERS[0]
    for tier in TIERS:
        if window >= tier.min_window:
            chosen = tier
    return chosen


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    for end in (". ", "! ", "? "):
        at = text.find(end)
        if 0 < at < 200:
            return text[: at + 1]
    return text if len(text) <= 200 else text[:197].rstrip() + "…"


def _compact_schema(schema: Any) -> Any:
    """The schema without ``description`` texts (names, types and ``required`` stay).

    Only the ``description`` keyword goes: a *property* called ``description`` is kept.
    """
    if isinstance(schema, list):
        return [_compact_schema(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "description" and isinstance(value, str):
            continue
        if key in ("properties", "patternProperties", "$defs", "definitions") and isinstance(
            value, dict
        ):
            out[key] = {name: _compact_schema(sub) for name, sub in value.items()}
        else:
            out[key] = _compact_schema(value)
    return out


def compact_tools(definitions: Sequence[ToolDefinition]) -> list[ToolDefinition]:
    """Tool definitions for a small window: short descriptions, bare parameter schemas.

    The first sentence of each description is kept and the parameters lose their
    descriptions; the model still sees every name, type and required field, so every call it
    could make before it can still make.
    """
    return [
        replace(
            d,
            description=_first_sentence(d.description),
            parameters=_compact_schema(d.parameters),
        )
        for d in definitions
    ]
