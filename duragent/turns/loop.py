"""The agentic loop: LLM → tool calls → execute → results → repeat, within every limit.

One call of ``run_loop`` drives a turn from the current history until the model answers
without tools, a tool needs approval, or ``max_tool_iterations`` is reached. Before every LLM
call the request is fitted to the window (``context.render.fit_request``); every tool result is
capped (Layer 3a) before it is stored. Messages the user sends meanwhile arrive through
``steering`` and are picked up at the next tool boundary: the remaining calls of that response
are recorded as skipped and the model sees the new message.

Failures the user would otherwise never see become part of the outcome: a tool's error is a
result the model can read and correct; malformed arguments and unknown tools too; the same
call repeated three times in a row is stopped with a note to the model (one call's path is
``calls``).

Hooks (``turns.hooks``): a ``before_tool`` guard's refusal is the call's result (the tool never
runs); ``after_tool`` steering texts of a response are recorded (``steering`` events) and added
as user messages after *all* of that response's tool results, so a call is always followed by
its results as providers require (the reference adds each one right after its own result).

A loop paused for approval resumes here too: ``resume_approved`` runs (or refuses) the call a
person decided on through the same ``calls`` path, then the runner calls ``run_loop`` again.
"""

from __future__ import annotations

import logging
import operator
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from duragent.agents.spec import HooksSpec
from duragent.context.budget import BudgetReport, BudgetSettings
from duragent.context.quoting import with_note
from duragent.context.render import HistoryCache, TurnCache, fit_request
from duragent.context.tiers import compact_tools
from duragent.context.tokens import TokenCounter
from duragent.core.approval import ApprovalDecision, PendingApproval
from duragent.core.ids import new_message_id
from duragent.core.messages import (
    Message,
    Role,
    ToolCall,
    ToolDefinition,
    Usage,
    steering_message,
)
from duragent.errors import ContextLengthExceededError, LLMError
from duragent.llm import (
    ChatRequest,
    LLMProvider,
    OutputLimits,
    ResponseDone,
    TextDelta,
)
from duragent.observability.metrics import CallMeter, error_kind
from duragent.tools.base import Tool, ToolContext
from duragent.tools.policy import Policy
from duragent.tools.send_file import ReplyFile, ReplyFiles
from duragent.turns.call_limits import within_limits
from duragent.turns.calls import decided, execute, store_result
from duragent.turns.hooks import after_tool
from duragent.turns.images import TurnAttachments
from duragent.turns.sink import TurnSink
from duragent.turns.summaries import SummaryTier
from duragent.turns.token_quota import TokenQuota

__all__ = [
    "CLIENT_LEFT",
    "CLIENT_LEFT_RESULT",
    "LoopContext",
    "LoopOutcome",
    "Recorder",
    "cancelled_result",
    "resume_approved",
    "run_loop",
]

log = logging.getLogger(__name__)

CONTEXT_RETRIES = 2
CLIENT_LEFT = "the client disconnected"
"""Why a streaming turn was cancelled when its client went away (the cancel message)."""


def cancelled_result(reason: str) -> str:
    """The result recorded for a call whose turn was cut short while it ran or waited."""
    return f"Error: tool execution cancelled: {reason}"


CLIENT_LEFT_RESULT = cancelled_result(CLIENT_LEFT)


class Recorder(Protocol):
    """How the loop persists what happens (implemented over the session actor)."""

    async def assistant(
        self,
        content: str,
        tool_calls: tuple[ToolCall, ...],
        usage: Usage | None,
        budget: dict[str, int],
        message_id: str | None,
        files: Sequence[ReplyFile] = (),
    ) -> int:
        """Record a model response, durably (fsync'd) before this returns.

        ``files``: what a final reply carries (``send_file``'s, waiting in ``reply_files``).

        A response with tool calls too: a tool's side effects must never happen before the
        record that explains them is on disk (a crash would leave an effect without a cause).
        """
        ...

    async def tool_result(self, call_id: str, success: bool, content: str) -> None:
        """Record a tool result (batched)."""
        ...

    async def skipped(self, call_ids: list[str], reason: str) -> None:
        """Record calls that were not run (batched)."""
        ...

    async def steering(self, content: str) -> None:
        """Record an ``after_tool`` hook's steering text (batched)."""
        ...

    async def pending_approval(self, approval: PendingApproval) -> None:
        """Durably record that ``approval`` waits for a decision (and pause the session)."""
        ...


@dataclass(slots=True)
class LoopContext:
    """Everything one turn's loop needs."""

    provider: LLMProvider
    tools: Mapping[str, Tool]
    policy: Policy
    counter: TokenCounter
    budget: BudgetSettings
    system_prompt: str
    max_iterations: int
    tool_context: ToolContext
    recorder: Recorder
    temperature: float | None = None
    price: Callable[[Usage], Usage] = field(default=lambda usage: usage)
    """Adds the cost to a call's usage when the model has pricing."""
    sink: TurnSink | None = None
    steering: Callable[[], list[str]] = field(default=lambda: [])
    history_cache: HistoryCache | None = None
    """The session's split and counted history, reused from call to call and turn to turn."""
    max_calls_per_response: int = 32
    """Calls of one response beyond this are skipped with a result saying so."""
    max_calls_per_turn: int = 128
    """Calls of one turn beyond this are skipped with a result saying so."""
    limits: OutputLimits = field(default_factory=OutputLimits)
    """What one model response may be (enforced by the provider while reading it)."""
    summaries: SummaryTier | None = None
    """The summaries tier: the reference block, summaries before the turn and on overflow."""
    context: str = ""
    """This turn's quoted context (a group's recent chatter, ``context.quoting``): a user
    message before the latest one, counted in the fixed part, never written to the history."""
    hooks: HooksSpec = field(default_factory=HooksSpec)
    """The agent's tool hooks with its builtins' defaults (``turns.hooks.effective_hooks``)."""
    rebuild_tools: Callable[[], Mapping[str, Tool]] | None = None
    """The turn's tools built again (after ``reload_tools``: new scripts on disk)."""
    meter: CallMeter | None = None
    attachments: TurnAttachments | None = None
    """How messages with attachments read in requests, images included (``turns.images``);
    None: as plain text."""
    reply_files: ReplyFiles | None = None
    """The files ``send_file`` attached, handed to the next final reply (``turns.reply_files``)."""
    quota: TokenQuota | None = None
    """Asked before each model call (summaries too): a refusal ends the turn with it as the
    reply, recorded (``turns.token_quota``: the chat's tokens for today are spent)."""
    """Where model calls are counted (``observability.metrics``); None when metrics are off."""


@dataclass(slots=True)
class LoopOutcome:
    """How the loop ended."""

    status: str  # "complete" | "awaiting_approval"
    content: str = ""
    message_id: str | None = None
    reply_seq: int | None = None
    usage: Usage = field(default_factory=Usage)
    call_id: str | None = None
    command: str | None = None
    iterations: int = 0
    calls: int = 0
    """Tool calls run (or refused) this turn, for ``max_calls_per_turn``."""
    budgets: list[dict[str, int]] = field(default_factory=list)
    earlier: list[str] = field(default_factory=list)
    """Final replies written before ``content`` (a message arrived while each was written)."""
    attachments: list[ReplyFile] = field(default_factory=list)
    """The files the turn's final replies carry (``send_file``), in order."""


_ROLE = operator.attrgetter("role")


class _TurnMemo:
    """What stays the same across the calls of one turn: tool definitions and turn units."""

    def __init__(self) -> None:
        self.units = TurnCache()
        self._tools: tuple[list[ToolDefinition], int] | None = None
        self._fixed: tuple[str, str, TokenCounter, object, int] | None = None
        self._sent: list[Message] = []
        self._sent_turn_length = 0

    def sent(self, messages: list[Message], turn: list[Message]) -> None:
        """Remember what the model was just sent (hooks judge by what the model sees)."""
        roles = list(map(_ROLE, messages))  # in C: the request may hold the whole chat
        lead = 0
        while lead < len(roles) and roles[lead] is Role.SYSTEM:
            lead += 1
        if roles.count(Role.SYSTEM) == lead:  # system messages lead the request
            self._sent = messages[lead:]
        else:
            self._sent = [m for m in messages if m.role is not Role.SYSTEM]
        self._sent_turn_length = len(turn)

    def seen(self, turn: list[Message]) -> list[Message]:
        """The conversation as the model last saw it, plus what this turn added since."""
        return [*self._sent, *turn[self._sent_turn_length :]]

    def forget_tools(self) -> None:
        """The tools changed (``reload_tools``): compute the definitions again."""
        self._tools = None

    def tools(self, ctx: LoopContext) -> tuple[list[ToolDefinition], int]:
        """The tool definitions offered this turn and what they cost.

        Computed once, and again if a tool was added mid-turn (``tool_output``, once an
        output was saved).
        """
        if self._tools is None or len(self._tools[0]) != len(ctx.tools):
            definitions = [t.definition() for t in ctx.tools.values()]
            if not ctx.budget.full_prompt:  # a small window's tier (``context.tiers``)
                definitions = compact_tools(definitions)
            self._tools = (definitions, ctx.counter.count_tools(definitions))
        return self._tools

    def fixed(self, ctx: LoopContext) -> int:
        """The prompt (with the note a context adds), the context and the tools' cost.

        Kept by the texts, counter and tool definitions it was counted from: it is asked at
        least twice a turn, and the prompt's ``Message`` is new each time, so the counter's
        per-message cache never answered.
        """
        tools = self.tools(ctx)
        memo = self._fixed
        if (
            memo is not None
            and memo[0] == ctx.system_prompt
            and memo[1] == ctx.context
            and memo[2] is ctx.counter
            and memo[3] is tools
        ):
            return memo[4]
        quoted = bool(ctx.context.strip())
        prompt = with_note(ctx.system_prompt) if quoted else ctx.system_prompt
        cost = ctx.counter.count_message(Message.system(prompt)) if prompt.strip() else 0
        cost += ctx.counter.count_message(Message.user(ctx.context)) if quoted else 0
        cost += tools[1]
        self._fixed = (ctx.system_prompt, ctx.context, ctx.counter, tools, cost)
        return cost


async def _call_model(
    ctx: LoopContext, history: list[Message], turn: list[Message], cache: _TurnMemo
) -> tuple[Any, BudgetReport]:
    """Fit and send one request, tightening the budget if the provider says it overflowed."""
    budget = ctx.budget
    tools, tools_tokens = cache.tools(ctx)
    summarised = False
    for attempt in range(CONTEXT_RETRIES + 1):
        tier = ctx.summaries
        carried: tuple[Sequence[Message], Sequence[Message]] = (history, turn)
        if ctx.attachments is not None:  # attachments as lines; images given back below
            carried = await ctx.attachments.prepare(history, turn)
        messages, report = fit_request(
            system=ctx.system_prompt,
            history=carried[0],
            turn=carried[1],
            tools=tools,
            counter=ctx.counter,
            settings=budget,
            turn_cache=cache.units,
            history_cache=ctx.history_cache,
            tools_tokens=tools_tokens,
            reference=tier.block(cache.fixed(ctx)) if tier is not None else "",
            context=ctx.context,
        )
        if ctx.attachments is not None:
            messages = ctx.attachments.show(messages, report, budget.limit)
        request = ChatRequest(
            messages=messages,
            tools=tools,
            max_output_tokens=budget.output_reserve,
            temperature=ctx.temperature,
            limits=ctx.limits,
        )
        meter = ctx.meter
        began = time.perf_counter()
        first: float | None = None
        try:
            response = None
            cache.sent(messages, turn)
            async for event in ctx.provider.stream(request):
                if isinstance(event, TextDelta):
                    if first is None:
                        first = time.perf_counter() - began
                    if ctx.sink is not None:
                        await ctx.sink.token(event.text)
                elif isinstance(event, ResponseDone):
                    response = event.response
            if meter is not None:
                meter.call(time.perf_counter() - began, first)
            return response, report
        except ContextLengthExceededError as exc:
            if meter is not None:
                meter.error(error_kind(exc))
            if attempt == CONTEXT_RETRIES:
                raise
            if meter is not None:
                meter.action("overflow_retries")
            if tier is not None and not summarised:
                summarised = True  # overflow → summarise → retry, once (summaries spec)
                if await tier.on_overflow(history, cache.fixed(ctx)):
                    log.warning("provider reported context overflow; summarised and retrying")
                    continue
            # Our count disagreed with the provider's: fit again into a smaller window.
            smaller = max(budget.output_reserve + 256, int(budget.window * 0.75))
            log.warning("provider reported context overflow; refitting to %d tokens", smaller)
            budget = replace(budget, window=smaller)  # every other setting kept
        except LLMError as exc:
            if meter is not None:
                meter.error(error_kind(exc))
            raise
    raise AssertionError("unreachable")  # pragma: no cover


async def run_loop(
    ctx: LoopContext, history: list[Message], turn: list[Message], iterations_done: int = 0
) -> LoopOutcome:
    """Drive the turn to an outcome (see module docstring). ``turn`` is extended in place."""
    # A turn resumed after an approval: the calls it already made count against the limit.
    made = sum(1 for m in turn if m.role is Role.TOOL and not m.text.startswith("Skipped: "))
    outcome = LoopOutcome(status="complete", iterations=iterations_done, calls=made)
    recent: list[tuple[str, str]] = []
    cache = _TurnMemo()
    if ctx.summaries is not None:
        if await _refused(ctx, outcome):  # summarising is a model call too
            return outcome
        if ctx.attachments is not None:  # the tier sizes the history as requests carry it
            await ctx.attachments.prepare(history, turn)
        await ctx.summaries.before_turn(history, cache.fixed(ctx))
    steer: list[str] = []  # this response's after_tool texts, added after all its results
    while True:
        turn.extend(Message.user(text) for text in ctx.steering())
        if await _refused(ctx, outcome):
            return outcome
        response, report = await _call_model(ctx, history, turn, cache)
        if response is None:
            raise RuntimeError("provider stream ended without a response")
        usage = ctx.price(response.usage) if response.usage is not None else None
        if usage is not None:
            outcome.usage = outcome.usage + usage
            if ctx.quota is not None:
                ctx.quota.spent(usage)
        budget = report.to_dict()
        if ctx.meter is not None:
            ctx.meter.budget(budget)
            if usage is not None:
                ctx.meter.usage(usage.prompt_tokens, usage.completion_tokens, usage.cost_usd)
        outcome.budgets.append(budget)
        calls = response.tool_calls
        if not calls:
            message_id = new_message_id()
            outcome.reply_seq = await ctx.recorder.assistant(
                response.content, (), usage, budget, message_id, _files(ctx, outcome)
            )
            outcome.content = response.content
            outcome.message_id = message_id
            late = ctx.steering()
            if not late:
                return outcome
            # Messages that arrived while this answer was being written get answered too.
            outcome.earlier.append(response.content)
            turn.append(response.to_message())
            turn.extend(Message.user(text) for text in late)
            continue
        outcome.iterations += 1
        await ctx.recorder.assistant(response.content, calls, usage, budget, None)
        calls = await within_limits(
            ctx.recorder,
            turn,
            response,
            max_per_response=ctx.max_calls_per_response,
            room=ctx.max_calls_per_turn - outcome.calls,
        )
        for index, call in enumerate(calls):
            outcome.calls += 1
            if ctx.sink is not None:
                await ctx.sink.tool_call(call)
            steered = ctx.steering()
            if steered:
                rest = [c.id for c in calls[index:]]
                await ctx.recorder.skipped(rest, "new user message received")
                turn.extend(Message.tool(cid, "Skipped: new user message received") for cid in rest)
                await _add_steering(ctx, turn, steer)
                turn.extend(Message.user(text) for text in steered)
                break
            seen = cache.seen(turn) if ctx.hooks.before_tool else ()
            result = await execute(ctx, call, recent, seen)
            if isinstance(result, PendingApproval):
                rest = [c.id for c in calls[index + 1 :]]
                if rest:
                    await ctx.recorder.skipped(rest, "approval required")
                await _add_steering(ctx, turn, steer)
                await ctx.recorder.pending_approval(result)
                if ctx.sink is not None:
                    await ctx.sink.approval_required(call.id, result.command)
                outcome.status = "awaiting_approval"
                outcome.call_id = call.id
                outcome.command = result.command
                return outcome
            await store_result(ctx, turn, call.id, result)
            if note := after_tool(ctx.hooks, call, result.success):
                steer.append(note)
            if result.reload_tools and ctx.rebuild_tools is not None:
                ctx.tools = ctx.rebuild_tools()  # the next model call offers what it found
                cache.forget_tools()
        await _add_steering(ctx, turn, steer)
        if outcome.iterations >= ctx.max_iterations:
            note = (
                f"I stopped after {outcome.iterations} tool steps without finishing "
                f"(max_tool_iterations is {ctx.max_iterations}). Ask me to continue if you "
                "want me to keep going."
            )
            message_id = new_message_id()
            outcome.reply_seq = await ctx.recorder.assistant(
                note, (), None, budget, message_id, _files(ctx, outcome)
            )
            outcome.content = note
            outcome.message_id = message_id
            if ctx.sink is not None:
                await ctx.sink.token(note)
            return outcome


async def _refused(ctx: LoopContext, outcome: LoopOutcome) -> bool:
    """Whether the quota refuses the next call; if so its refusal is the turn's reply."""
    refusal = ctx.quota.check() if ctx.quota is not None else None
    if refusal is None:
        return False
    message_id = new_message_id()
    outcome.reply_seq = await ctx.recorder.assistant(
        refusal, (), None, {}, message_id, _files(ctx, outcome)
    )
    outcome.content = refusal
    outcome.message_id = message_id
    if ctx.sink is not None:
        await ctx.sink.token(refusal)
    return True


def _files(ctx: LoopContext, outcome: LoopOutcome) -> tuple[ReplyFile, ...]:
    """The files waiting for the final reply about to be recorded, now the outcome's too."""
    files = ctx.reply_files.take() if ctx.reply_files is not None else ()
    outcome.attachments.extend(files)
    return files


async def _add_steering(ctx: LoopContext, turn: list[Message], steer: list[str]) -> None:
    """Record and show the model the response's steering texts (emptying ``steer``)."""
    for content in steer:
        await ctx.recorder.steering(content)
        turn.append(steering_message(content))
    steer.clear()


async def resume_approved(
    ctx: LoopContext, approval: PendingApproval, decision: ApprovalDecision
) -> None:
    """Settle the call the loop paused on: run it (or refuse it, as decided) and store its result.

    The turn then continues with ``run_loop`` from the session's window, which holds the
    result. The same ``run_tool`` and ``store_result`` as a call the model just made.
    """
    await store_result(ctx, [], approval.call_id, await decided(ctx, approval, decision))
