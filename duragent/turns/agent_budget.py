"""An agent's budget split before any turn: the load-time check and ``duragent doctor``.

It lives in the session layer because it needs both the agent (its system prompt and budget
settings) and the tool definitions (tools), and ``context`` does not import agents. The tools
counted are the ones built from agent.yaml and the tool folders; tools the runtime adds per
session (e.g. ``schedule``) are not, which the margin of ``min_history_room`` absorbs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from duragent.agents import Agent
from duragent.agents.system_prompt import build_system_prompt
from duragent.context.budget import BudgetSettings, BudgetSplit
from duragent.context.tiers import compact_tools
from duragent.context.tokens import counter_for_model
from duragent.core.messages import Message
from duragent.tools.registry import build_tools

__all__ = ["agent_budget", "budget_check", "budget_settings"]


def budget_settings(agent: Agent) -> BudgetSettings:
    """Budget settings from an agent's ``spec.model`` and ``spec.session.context``."""
    context = agent.spec.session.context
    return BudgetSettings.for_model(
        agent.model.name,
        max_input_tokens=agent.model.max_input_tokens,
        max_output_tokens=agent.model.max_output_tokens,
        max_history_tokens=context.max_history_tokens,
        keep_first=context.tool_result_keep_first,
        keep_last=context.tool_result_keep_last,
        max_tool_result_tokens=context.max_tool_result_tokens,
        truncation=context.tool_result_truncation,
        prune=context.prune.enabled,
        prune_protect_tokens=context.prune.protect_tokens,
        prune_minimum_tokens=context.prune.minimum_tokens,
        protected_tools=context.prune.protected_tools,
        full_prompt=context.full_prompt,
    )


def agent_budget(agent: Agent, workspace_dir: Path) -> BudgetSplit:
    """How ``agent``'s window is shared between reply, safety, prompt, tools and history."""
    counter = counter_for_model(agent.model.name)
    tools = build_tools(
        agent, workspace_dir=workspace_dir, world_memory_dir=workspace_dir / "memory" / "world"
    )
    settings = budget_settings(agent)
    definitions = [tool.definition() for tool in tools.values()]
    if not settings.full_prompt:
        definitions = compact_tools(definitions)
    prompt = build_system_prompt(agent, compact=not settings.full_prompt)
    return BudgetSplit.of(
        settings,
        system_prompt=counter.count_message(Message.system(prompt)),
        tools=counter.count_tools(definitions) if definitions else 0,
    )


def budget_check(workspace_dir: Path) -> Callable[[Agent], None]:
    """A ``load_catalog`` check: raises ConfigError when history would get too little room."""

    def check(agent: Agent) -> None:
        problem = agent_budget(agent, workspace_dir).problem(
            agent.directory / "agent.yaml",
            reserve_configured=agent.model.max_output_tokens is not None,
        )
        if problem is not None:
            raise problem

    return check
