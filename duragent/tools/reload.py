"""The ``reload_tools`` tool: pick up tool scripts written during the turn.

Scripts in ``<agent>/tools/<name>/run[.*]`` and ``<workspace>/.duragent/tools/<name>/run[.*]``
are discovered when a turn starts. An agent that writes a new one mid-turn calls
``reload_tools``: it rescans both folders and reports what it found (the reference's JSON:
``discovered_tools`` with ``name`` and ``description``, ``count``, ``directories_scanned``),
and its outcome asks the loop to rebuild the turn's tools before the next model call, so the
new tool can be called in the same turn.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from duragent.core.messages import ToolDefinition
from duragent.tools.base import PolicyType, ToolContext, ToolOutcome
from duragent.tools.cli_tool import discover_tools, tool_description

__all__ = ["ReloadToolsTool"]


class ReloadToolsTool:
    """Rescans the tool folders; the loop then offers what it found (see module docstring)."""

    name: str = "reload_tools"
    policy_type: PolicyType = "builtin"

    def definition(self) -> ToolDefinition:
        """No arguments."""
        return ToolDefinition(
            name=self.name,
            description=(
                "Reload tools by scanning tool directories. Call this after writing a new tool "
                "script to disk so it becomes available for use. Returns a summary of all "
                "discovered tools."
            ),
            parameters={"type": "object", "properties": {}},
        )

    def invocation(self, args: Mapping[str, Any]) -> str:
        """``reload_tools``."""
        return self.name

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Scan both folders; the outcome tells the loop to rebuild its tools."""
        roots = (ctx.agent_dir / "tools", ctx.workspace_dir / "tools")
        found = discover_tools(*roots)
        summary = {
            "discovered_tools": [
                {"name": t.name, "description": tool_description(t.name, None, t.readme)}
                for t in found
            ],
            "count": len(found),
            "directories_scanned": [str(root) for root in roots],
        }
        return ToolOutcome(True, json.dumps(summary, indent=2), reload_tools=True)
