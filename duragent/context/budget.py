"""Budget settings for one agent's LLM calls, and the report of what a fit did.

``limit`` is the most a request may cost: the window minus the reply reserve minus a 10 %
safety margin (the margin absorbs the difference between our count and a provider's for
models whose tokenizer we only estimate). Every request the runtime sends is at most
``limit`` by our counter — the guarantee the property tests check.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from duragent.context.pruning import PrunePolicy
from duragent.context.tiers import Tier, tier_for
from duragent.context.truncation import Strategy
from duragent.context.window import context_window, output_reserve
from duragent.errors import ConfigError, DuragentError

__all__ = [
    "BudgetReport",
    "BudgetSettings",
    "BudgetSplit",
    "ContextOverflowError",
    "min_history_room",
]


class ContextOverflowError(DuragentError):
    """Even the minimum request (system prompt + latest message) exceeds the window."""

    def __init__(self, needed: int, limit: int) -> None:
        self.needed = needed
        self.limit = limit
        super().__init__(
            f"the request cannot fit the model's context window: the system prompt, tool "
            f"definitions and latest message alone need ~{needed} tokens but only {limit} are "
            "available; shorten the message or the system prompt (soul, instructions, memory, "
            "directives, skills), lower spec.model.max_output_tokens, or raise "
            "spec.model.max_input_tokens if the model accepts more"
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
    prune: PrunePolicy | None = None
    """Pruning of old tool outputs at render time (``context.pruning``); None: off."""
    full_prompt: bool = True
    """Whether the full built-in prompt and tool descriptions are sent (``context.tiers``)."""

    @property
    def tier(self) -> Tier:
        """The window's tier (``context.tiers``), where every unset default comes from."""
        return tier_for(self.window)

    @property
    def safety(self) -> int:
        """Tokens held back for counting error (10 % of the window)."""
        return int(self.window * self.safety_ratio)

    @property
    def limit(self) -> int:
        """The most a request may cost."""
        return max(0, self.window - self.output_reserve - self.safety)

    def describe_tier(self) -> str:
        """One line for ``doctor``: the tier and the defaults it gave (or the user set)."""
        prune = (
            f"prune outputs beyond {self.prune.protect} (steps of {self.prune.minimum})"
            if self.prune is not None
            else "pruning off"
        )
        prompt = "full prompt" if self.full_prompt else "compact prompt"
        return (
            f"tier {self.tier.label}: tool results ≤ {self.max_tool_result_tokens}, {prune}, "
            f"{prompt}"
        )

    @classmethod
    def for_model(
        cls,
        model_name: str,
        *,
        max_input_tokens: int | None = None,
        max_output_tokens: int | None = None,
        max_tool_result_tokens: int | None = None,
        prune: bool = False,
        prune_protect_tokens: int | None = None,
        prune_minimum_tokens: int | None = None,
        protected_tools: Iterable[str] = (),
        full_prompt: bool | None = None,
        **context: Any,
    ) -> BudgetSettings:
        """Settings from a model name and an agent's ``session.context`` values.

        Every value left None takes the window tier's default (``context.tiers``).
        """
        window = context_window(model_name, max_input_tokens)
        settings = cls(
            window=window,
            output_reserve=output_reserve(max_output_tokens, window),
            **context,
        )
        tier = settings.tier
        history = settings.limit
        if settings.max_history_tokens > 0:
            history = min(history, settings.max_history_tokens)
        policy = None
        if prune:
            policy = PrunePolicy(
                protect=tier.prune_protect(history)
                if prune_protect_tokens is None
                else prune_protect_tokens,
                minimum=tier.prune_minimum(history)
                if prune_minimum_tokens is None
                else prune_minimum_tokens,
                protected_tools=frozenset(protected_tools),
            )
        return replace(
            settings,
            max_tool_result_tokens=tier.tool_result_tokens(settings.limit)
            if max_tool_result_tokens is None
            else max_tool_result_tokens,
            prune=policy,
            full_prompt=tier.full_prompt if full_prompt is None else full_prompt,
        )


def min_history_room(window: int) -> int:
    """The least a request must leave for history and the user's message.

    An eighth of the window, at least 256 tokens: below that a turn can hold little more
    than one short message, and the agent is better reported broken at load than failing
    (or forgetting everything) at every turn.
    """
    return max(256, window // 8)


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetSplit:
    """How one agent's window is shared, as far as it is known before a turn.

    ``system_prompt`` is the static prompt (soul, instructions, directives, skills) as built
    at load; memory and run-time directives can grow it, which the turn's own check catches.
    """

    window: int
    reserve: int
    safety: int
    system_prompt: int
    tools: int

    @classmethod
    def of(cls, settings: BudgetSettings, *, system_prompt: int, tools: int) -> BudgetSplit:
        """The split of ``settings`` given the counted prompt and tool definitions."""
        return cls(
            window=settings.window,
            reserve=settings.output_reserve,
            safety=settings.safety,
            system_prompt=system_prompt,
            tools=tools,
        )

    @property
    def history(self) -> int:
        """Tokens left for history and the user's message (may be negative)."""
        return self.window - self.reserve - self.safety - self.system_prompt - self.tools

    @property
    def minimum(self) -> int:
        """The least ``history`` may be (``min_history_room``)."""
        return min_history_room(self.window)

    def describe(self) -> str:
        """One line: ``window 4096 = reply 1024 + safety 409 + … + history 2500``."""
        return (
            f"window {self.window} = reply {self.reserve} + safety {self.safety} + system "
            f"prompt {self.system_prompt} + tools {self.tools} + history {self.history}"
        )

    def problem(self, file: Path, *, reserve_configured: bool) -> ConfigError | None:
        """A ConfigError naming the field to change when history gets too little room."""
        if self.reserve >= self.window:
            return self._reserve_too_large(file, reserve_configured=reserve_configured)
        if self.history >= self.minimum:
            return None
        short = self.minimum - self.history
        if reserve_configured and self.reserve - short >= 256:
            field = "spec.model.max_output_tokens"
            fix = (
                f"lower spec.model.max_output_tokens to at most {self.reserve - short}, "
                "raise spec.model.max_input_tokens if the model accepts more, or shorten "
                "the system prompt or the tool list"
            )
        else:
            field = "spec.model.max_input_tokens"
            fix = (
                f"raise spec.model.max_input_tokens by at least {short} if the model accepts "
                "more, shorten the system prompt (soul, instructions, directives, skills), or "
                "offer fewer tools"
            )
        return ConfigError(
            f"the context window leaves only {self.history} tokens for history and the "
            f"user's message, less than the minimum {self.minimum} ({self.describe()})",
            file=file,
            field=field,
            fix=fix,
        )

    def _reserve_too_large(self, file: Path, *, reserve_configured: bool) -> ConfigError:
        """The reply reserve alone takes the whole window: no request can ever be sent."""
        tier = tier_for(self.window)
        default = tier.reply_reserve(self.window)
        if reserve_configured:
            field = "spec.model.max_output_tokens"
            fix = (
                f"lower spec.model.max_output_tokens well below the window (the {tier.label} "
                f"tier's default is {default}), or remove it to use that default"
            )
        else:
            field = "spec.model.max_input_tokens"
            fix = "raise spec.model.max_input_tokens to the model's real context window"
        return ConfigError(
            f"the reply reserve ({self.reserve} tokens) is not smaller than the context "
            f"window ({self.window} tokens): no request could be sent",
            file=file,
            field=field,
            fix=fix,
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
    results_pruned: int = 0
    groups_dropped: int = 0
    calls_left_out: int = 0
    results_shrunk: int = 0
    calls_repaired: int = 0
    orphans_dropped: int = 0
    images_sent: int = 0
    images_left_out: int = 0
    """Images a model that can see was sent, and recent ones left as placeholders for room."""

    def to_dict(self) -> dict[str, int]:
        """Only the non-zero counters, plus the sizes (keeps events small)."""
        # by hand, in field order: ``asdict`` deep-copies field by field (~0.7 % of a turn)
        counters = (
            ("history_omitted", self.history_omitted),
            ("results_masked", self.results_masked),
            ("results_pruned", self.results_pruned),
            ("groups_dropped", self.groups_dropped),
            ("calls_left_out", self.calls_left_out),
            ("results_shrunk", self.results_shrunk),
            ("calls_repaired", self.calls_repaired),
            ("orphans_dropped", self.orphans_dropped),
            ("images_sent", self.images_sent),
            ("images_left_out", self.images_left_out),
        )
        return {
            "window": self.window,
            "limit": self.limit,
            "request_tokens": self.request_tokens,
            "history_sent": self.history_sent,
            **{key: value for key, value in counters if value},
        }
