"""One tool call: checked, decided by policy, run, its result capped and stored.

Split from ``loop`` so the two ways a call runs share one path: a call the model just made
(``execute``: repeated-call guard, unknown tool, bad arguments, policy), and a call a person
decided on after the loop paused for approval (``decided``). Both end in ``run_tool`` and
``store_result``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from duragent.context.truncation import Truncated, truncate_tool_result
from duragent.core.approval import ApprovalDecision, PendingApproval
from duragent.core.messages import Message, ToolCall
from duragent.errors import DuragentError
from duragent.llm import REJECTED_KEY
from duragent.tools.base import RunsCommands, Tool, ToolContext, ToolOutcome
from duragent.tools.notify import NOTIFIER
from duragent.tools.policy import Decision
from duragent.tools.registry import lookup
from duragent.tools.tool_output import TOOL_OUTPUT, ToolOutputTool
from duragent.turns.hooks import before_tool

if TYPE_CHECKING:
    from duragent.turns.loop import LoopContext

__all__ = [
    "DOOM_LOOP_REPEATS",
    "TOOL_TIMEOUT_SECONDS",
    "decided",
    "execute",
    "run_tool",
    "store_result",
]

log = logging.getLogger(__name__)

DOOM_LOOP_REPEATS = 3
TOOL_TIMEOUT_SECONDS = 600


async def run_tool(tool: Tool, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
    """Run a tool with a hard timeout, turning every exception into a readable failure."""
    try:
        async with asyncio.timeout(TOOL_TIMEOUT_SECONDS):
            return await tool.run(args, ctx)
    except TimeoutError:
        return ToolOutcome(False, f"Tool execution failed: timed out after {TOOL_TIMEOUT_SECONDS}s")
    except Exception as exc:
        log.exception("tool %s failed", tool.name)
        return ToolOutcome(False, f"Tool execution failed: {type(exc).__name__}: {exc}")


async def store_result(
    ctx: LoopContext, turn: list[Message], call_id: str, result: ToolOutcome
) -> None:
    """Cap a tool result (Layer 3a), persist it, add it to the turn and report it.

    A result the cap cuts is first saved in full for the session (``store.saved_outputs``), so
    its notice can name it and ``tool_output`` can read what was cut; if the save fails the
    result is still recorded, cut, without the reference.
    """
    capped = await _capped(ctx, result.content, save=result.save_if_cut)
    await ctx.recorder.tool_result(call_id, result.success, capped.text)
    turn.append(Message.tool(call_id, capped.text))
    if ctx.sink is not None:
        await ctx.sink.tool_result(call_id, result.success, capped.text)


async def _capped(ctx: LoopContext, content: str, *, save: bool) -> Truncated:
    budget = ctx.budget
    outputs = ctx.tool_context.outputs if save else None
    saved = outputs.new_id() if outputs is not None else None
    capped = truncate_tool_result(
        content, budget.max_tool_result_tokens, budget.truncation, ctx.counter, saved
    )
    if outputs is None or saved is None or not capped.truncated:
        return capped
    try:
        await asyncio.to_thread(outputs.save, saved, content)
    except (OSError, DuragentError) as exc:
        log.warning("could not save the full output as %s: %s", saved, exc)
        return truncate_tool_result(
            content, budget.max_tool_result_tokens, budget.truncation, ctx.counter
        )
    if TOOL_OUTPUT not in ctx.tools:  # from now on the model can read what was cut
        ctx.tools = {**ctx.tools, TOOL_OUTPUT: ToolOutputTool()}
    return capped


async def decided(
    ctx: LoopContext, approval: PendingApproval, decision: ApprovalDecision
) -> ToolOutcome:
    """The outcome of a call a person decided on: refused, or run if its tool still exists."""
    if decision is ApprovalDecision.DENY:
        return ToolOutcome(
            False,
            f"Command '{approval.command}' was denied by the user. "
            "Please try a different approach.",
        )
    tool = lookup(ctx.tools, approval.tool_name or "")
    if tool is None:
        return ToolOutcome(False, f"Tool '{approval.tool_name}' is no longer available.")
    return await _run_and_notify(ctx, tool, dict(approval.arguments), approval.command)


async def _run_and_notify(
    ctx: LoopContext, tool: Tool, args: Mapping[str, Any], command: str
) -> ToolOutcome:
    """Run a call that may run; then the policy's notifications, which never delay the turn."""
    outcome = await run_tool(tool, args, ctx.tool_context)
    NOTIFIER.after_call(
        ctx.policy,
        tool.policy_type,
        command,
        session_id=ctx.tool_context.session_id,
        agent=ctx.tool_context.agent_name,
        success=outcome.success,
    )
    return outcome


def _signature(call: ToolCall) -> tuple[str, str]:
    try:
        args = json.dumps(call.parsed_arguments(), sort_keys=True)
    except ValueError:
        args = call.arguments
    return call.name, args


async def execute(
    ctx: LoopContext,
    call: ToolCall,
    recent: list[tuple[str, str]],
    seen: Sequence[Message] = (),
) -> ToolOutcome | PendingApproval:
    """Run ``call`` if it may run; the approval it needs when policy says to ask first.

    ``recent`` holds the turn's last calls, for the repeated-call guard; ``seen`` the
    conversation as the model sees it, for the ``before_tool`` hooks (their refusal comes
    before policy: a call a guard refuses never asks a person).
    """
    signature = _signature(call)
    recent.append(signature)
    del recent[:-DOOM_LOOP_REPEATS]
    if len(recent) == DOOM_LOOP_REPEATS and len(set(recent)) == 1:
        return ToolOutcome(
            False,
            f"Stopped: you called {call.name} with the same arguments {DOOM_LOOP_REPEATS} times "
            "in a row. Repeating it will not give a different result; change the arguments or "
            "try another approach.",
        )
    tool = lookup(ctx.tools, call.name)
    if tool is None:
        names = ", ".join(sorted(ctx.tools)) or "(none)"
        return ToolOutcome(False, f"Unknown tool '{call.name}'. Available tools: {names}.")
    try:
        args = call.parsed_arguments()
    except ValueError as exc:
        return ToolOutcome(
            False,
            f"Invalid arguments for {call.name}: {exc}. Send a JSON object matching the tool's "
            "parameters.",
        )
    refused = args.get(REJECTED_KEY)
    if isinstance(refused, str) and len(args) == 1:
        return ToolOutcome(False, refused)  # refused where it entered (``llm.limits``)
    guard = before_tool(ctx.hooks, call.name, args, seen)
    if guard is not None:
        return ToolOutcome(False, guard)
    command = tool.invocation(args)
    checks: list[tuple[str, str]] = [(tool.policy_type, command)]
    if isinstance(tool, RunsCommands):  # a command it runs is checked as bash would be
        checks += [("bash", shell) for shell in tool.commands(args)]
    asked: tuple[str, str] | None = None
    for policy_type, checked in checks:
        # Off the event loop: analysing a long shell command takes a while (tree-sitter…).
        verdict = await asyncio.to_thread(ctx.policy.decide, policy_type, checked)
        if verdict.decision is Decision.DENY:
            return ToolOutcome(
                False, f"Command '{checked}' was denied by policy. This command is not allowed."
            )
        if verdict.decision is Decision.ASK and (asked is None or policy_type == "bash"):
            asked = (policy_type, checked)
    if asked is not None:
        return PendingApproval(
            call_id=call.id,
            tool_name=tool.name,
            arguments=args,
            command=asked[1],
            tool_type=asked[0],
        )
    return await _run_and_notify(ctx, tool, args, command)
