"""Budget settings for one agent's LLM calls, and the report of what a fit did.

``limit`` is the most a request may cost: the window minus the reply reserve minus a 10 %
safety margin (the margin absorbs the difference between our count and a provider's for
models whose tokenizer we only estimate). Every request the runtime sends is at most
``limit`` by our counter — the guarantee the property tests check.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from duragent.context.truncation import Strategy
from duragent.context.window import context_window, output_reserve
from duragent.errors import DuragentError

__all__ = ["BudgetReport", "BudgetSettings", "ContextOverflowError"]


class ContextOverflowError(DuragentError):
    """Even the minimum request (system prompt + latest message) exceeds the window."""

    def __init__(self, needed: int, limit: int) -> None:
        self.needed = needed
        self.limit = limit
        super().__init__(
            f"the request cannot fit the model's context window: the system prompt, tool "
            f"definitions and latest message alone need ~{needed} tokens but only {limit} are "
            "available; shorten the message or the prompt, or raise max_input_tokens"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetSettings:
    """The numbers that shape every request of an agent."""

    window: int
    output_reserve: int = 4096
    max_history_tokens: int = 20_000
    keep_first: int = 2
    keep_last: int = 5
    max_tool_result_tokens: int = 8_000
    truncation: Strategy = "head"
    safety_ratio: float = 0.10

    @property
    def safety(self) -> int:
        """Tokens held back for counting error (10 % of the window)."""
        return int(self.window * self.safety_ratio)

    @property
    def limit(self) -> int:
        """The most a request may cost."""
        return max(0, self.window - self.output_reserve - self.safety)

    @classmethod
    def for_model(
        cls,
        model_name: str,
        *,
        max_input_tokens: int | None = None,
        max_output_tokens: int | None = None,
        **context: Any,
    ) -> BudgetSettings:
        """Settings from a model name and an agent's ``session.context`` values."""
        window = context_window(model_name, max_input_tokens)
        return cls(
            window=window,
            output_reserve=output_reserve(max_output_tokens, window),
            **context,
        )


@dataclass(slots=True)
class BudgetReport:
    """What fitting one request did (persisted on the assistant event as ``budget``)."""

    window: int = 0
    limit: int = 0
    request_tokens: int = 0
    history_sent: int = 0
    history_omitted: int = 0
    results_masked: int = 0
    groups_dropped: int = 0
    results_shrunk: int = 0
    calls_repaired: int = 0
    orphans_dropped: int = 0

    def to_dict(self) -> dict[str, int]:
        """Only the non-zero counters, plus the sizes (keeps events small)."""
        data = asdict(self)
        keep = {"window", "limit", "request_tokens", "history_sent"}
        return {k: v for k, v in data.items() if k in keep or v}
