"""``spec.session``: the lifecycle, loop limits and context fitting of an agent's sessions.

The largest section of ``agent.yaml`` (``spec``), in a module of its own as ``spec.access``
is (``access_spec``): every limit a turn obeys (tool iterations, calls per response and per
turn, reply and argument sizes, the model's time limit) and how history and tool results are
fitted to the model's window (``spec.session.context``: caps, pruning, saved outputs,
summaries). Unset context values take the default of the window's tier (``context.tiers``),
so the models hold None for "not set" and show editors only what a user may write.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, WithJsonSchema

from duragent.config.section import Section as _Spec

__all__ = [
    "ContextSpec",
    "PruneSpec",
    "SavedOutputsSpec",
    "SessionSpec",
    "SummariesSpec",
    "TierBool",
    "TierInt",
]


def _tier_default(schema: dict[str, object]) -> WithJsonSchema:
    """The JSON Schema of a field whose default comes from the window tier.

    The model holds None for "not set"; editors see only the values a user may write (the
    plain integer or boolean schema), so a wrong value gets the precise message.
    """
    return WithJsonSchema(schema)


TierInt = Annotated[int | None, _tier_default({"type": "integer", "exclusiveMinimum": 0})]
TierBool = Annotated[bool | None, _tier_default({"type": "boolean"})]


class PruneSpec(_Spec):
    """``spec.session.context.prune``: old tool outputs replaced by a marker in requests."""

    enabled: bool = True
    protect_tokens: Annotated[int | None, _tier_default({"type": "integer", "minimum": 0})] = Field(
        default=None,
        ge=0,
        description="The newest tool outputs (in tokens) never pruned; default: the window "
        "tier's share of the history budget, at most 40000.",
    )
    minimum_tokens: TierInt = Field(
        default=None,
        gt=0,
        description="Prune only when it saves at least this many tokens (and in steps of it); "
        "default: the window tier's share of the history budget, at most 20000.",
    )
    protected_tools: list[str] = Field(
        default=["memory"], description="Tools whose outputs are never pruned."
    )


class SavedOutputsSpec(_Spec):
    """``spec.session.context.saved_outputs``: full copies of tool outputs Layer 3a cut."""

    enabled: bool = Field(
        default=True,
        description="Save cut outputs under the session folder and offer the tool_output tool "
        "(to agents that have tools).",
    )
    max_output_bytes: int = Field(
        default=8 << 20, ge=1024, description="A larger output is saved up to this size."
    )
    max_session_bytes: int = Field(
        default=64 << 20,
        ge=1024,
        description="Saved outputs of one session beyond this are removed, oldest first.",
    )
    retention_days: int = Field(
        default=7, ge=0, description="Saved outputs older than this are removed; 0 = keep."
    )


class SummariesSpec(_Spec):
    """``spec.session.context.summaries``: the summaries tier (not ``spec.session.compaction``).

    When the history would pass ``threshold`` of its budget, its oldest part is summarised by
    an LLM into a block sent after the system prompt; the session's task and pinned sections
    are never summarised. ``compaction`` is something else: how the event log is archived.
    Unset numbers take the default of the agent's window tier.
    """

    enabled: bool | None = Field(
        default=None,
        description="Summarise old history instead of only dropping it (default: on; "
        "false turns it off, and the session's task is then not pinned).",
    )
    model: str | None = Field(
        default=None,
        min_length=1,
        description="Model that writes summaries (same provider and base_url as spec.model); "
        "default: the agent's own model.",
    )
    threshold: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="Summarise when history passes this share of its budget (default 0.7).",
    )
    keep_recent: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description="Share of the history budget kept verbatim after a summary, latest "
        "message included: the low-water mark a summary goes down to (default: 0.2 below "
        "8K, 0.3 to 32K, 0.25 from 32K).",
    )
    max_summary_tokens: int | None = Field(
        default=None, ge=64, description="Longest summary (default: a tenth of the window, ≤ 2000)."
    )
    pinned_share: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description="Most of the history budget pins may take (default 0.25).",
    )
    pin_task: bool = Field(
        default=True, description="Pin the session's first user message as its task."
    )


class ContextSpec(_Spec):
    """``spec.session.context``: how history and tool results are fitted to the window.

    Unset values come from the window's tier (``context.tiers``: 2–4K, 4–8K, 8–32K, 32K+).
    """

    max_history_tokens: int = Field(default=20_000, ge=0, description="0 = no cap.")
    max_tool_result_tokens: TierInt = Field(
        default=None,
        gt=0,
        description="Layer 3a cap per tool result; default: the window tier's share of the "
        "request limit, at most 8000.",
    )
    tool_result_truncation: Literal["head", "tail", "both"] = "head"
    tool_result_keep_first: int = Field(default=2, ge=0)
    tool_result_keep_last: int = Field(default=5, ge=0)
    prune: PruneSpec = PruneSpec()
    saved_outputs: SavedOutputsSpec = SavedOutputsSpec()
    full_prompt: TierBool = Field(
        default=None,
        description="Send the full built-in prompt and tool descriptions; default: yes from "
        "an 8K window up, a compact form below.",
    )
    summaries: SummariesSpec = SummariesSpec()


class SessionSpec(_Spec):
    """``spec.session``: lifecycle and loop limits of this agent's sessions."""

    on_disconnect: Literal["pause", "continue"] = "pause"
    max_tool_iterations: int = Field(default=10, gt=0)
    max_tool_calls_per_response: int = Field(
        default=32, gt=0, description="Calls beyond this in one model response are skipped."
    )
    max_tool_calls_per_turn: int = Field(
        default=128, gt=0, description="Calls beyond this in one turn are skipped."
    )
    max_reply_bytes: int = Field(
        default=512 << 10,
        ge=1024,
        description="A model response (text plus tool arguments) is cut after this many bytes.",
    )
    max_tool_argument_bytes: int = Field(
        default=256 << 10, ge=1024, description="A tool call with larger arguments is refused."
    )
    max_tool_argument_depth: int = Field(
        default=64,
        ge=2,
        le=1000,
        description="A tool call whose arguments' JSON nests deeper is refused.",
    )
    llm_timeout_seconds: int = Field(default=300, gt=0)
    stream_replies: bool = Field(
        default=True,
        description="Chat replies (Telegram, Discord) show as they are written: a preview "
        "message edited as text arrives, then the formatted reply in its place.",
    )
    ttl_hours: int | None = Field(default=None, ge=0, description="0 disables expiry.")
    compaction: Literal["discard", "archive", "disabled"] | None = None
    context: ContextSpec = ContextSpec()
