"""The ``session`` tool: let an agent look at its other conversations.

``list`` shows up to 10 sibling sessions of the same agent (newest first, the current one
left out); ``read`` shows the last user/assistant messages of one, each cut at 500
characters so one long message cannot flood the context. The tool reaches sessions only
through the ``SessionReader`` port in its context, always naming its own agent and its caller:
the port lists and reads only that agent's sessions, and of those only the sessions of the
caller's own chat unless the caller reaches the whole agent (the operator over HTTP/CLI, or an
owner with ``tool_scope: agent`` in a DM). Another agent's or another chat's session reads as
"not found", exactly like one that does not exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from duragent.core.messages import ToolDefinition
from duragent.tools._args import builtin_invocation, int_arg, str_arg
from duragent.tools.base import PolicyType, ToolContext, ToolOutcome

__all__ = ["LIST_LIMIT", "MESSAGE_CHARS", "SessionTool"]

LIST_LIMIT = 10
MESSAGE_CHARS = 500
UNAVAILABLE = "session tool unavailable: this runtime does not expose other sessions"


def _cut(text: str, limit: int = MESSAGE_CHARS) -> str:
    # Characters, not bytes: a cut can never split a multibyte character.
    return text if len(text) <= limit else text[:limit] + "…"


class SessionTool:
    """Lists and reads the agent's other sessions."""

    name: str = "session"
    policy_type: PolicyType = "builtin"

    def definition(self) -> ToolDefinition:
        """``action`` list/read, ``session_id`` and ``limit`` for read."""
        return ToolDefinition(
            name=self.name,
            description=(
                "See your other conversations. action=list shows up to 10 of your other "
                "active sessions, newest first. action=read shows the last `limit` messages "
                "(default 20, at most 50) of session `session_id`, each cut at 500 characters."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["list", "read"]},
                    "session_id": {"type": "string", "description": "Session to read."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                },
                "required": ["action"],
            },
        )

    def invocation(self, args: Mapping[str, Any]) -> str:
        """``session:list`` or ``session:read``."""
        return builtin_invocation(self.name, args)

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Dispatch on ``action`` through ``ctx.sessions``."""
        reader = ctx.sessions
        if reader is None:
            return ToolOutcome(False, UNAVAILABLE)
        action = (str_arg(args, "action") or "").strip().lower()
        if action == "list":
            # One extra, because the current session may be among them.
            found = await reader.list_sessions(ctx.agent_name, LIST_LIMIT + 1, caller=ctx.caller)
            others = [s for s in found if s.session_id != ctx.session_id][:LIST_LIMIT]
            if not others:
                return ToolOutcome(True, "No other sessions")
            lines = [f"- {s.session_id} ({s.status}, updated {s.updated_at})" for s in others]
            return ToolOutcome(True, "\n".join(lines))
        if action == "read":
            session_id = str_arg(args, "session_id")
            if session_id is None:
                return ToolOutcome(False, "session read needs a `session_id` (see action=list)")
            limit = int_arg(args, "limit", default=20, low=1, high=50)
            try:
                messages = await reader.read_messages(
                    ctx.agent_name, session_id.strip(), limit, caller=ctx.caller
                )
            except LookupError:
                return ToolOutcome(False, f"session {session_id!r} not found")
            talk = [(r, t) for r, t in messages if r in ("user", "assistant")][-limit:]
            if not talk:
                return ToolOutcome(True, f"Session {session_id} has no messages yet")
            shown = [f"[{role}] {_cut(text)}" for role, text in talk]
            return ToolOutcome(True, "\n\n".join(shown))
        return ToolOutcome(False, f"unknown session action {action!r}; use 'list' or 'read'")
