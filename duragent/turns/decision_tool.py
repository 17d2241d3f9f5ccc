"""``record_decision``: the agent pins a decision so no summary can lose it (summaries tier).

Seeds 003 and 004 keep architecture and technical decisions out of compression. The agent
knows when it decided something; this tool lets it say so. The decision becomes a ``pin``
event (durable) and is sent in the reference block of every later request. Offered only
when the agent's summaries tier is on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from duragent.context.summaries import PinRefusedError
from duragent.core.messages import ToolDefinition
from duragent.session import SessionHandle
from duragent.tools.base import PolicyType, ToolContext, ToolOutcome
from duragent.turns.summaries import SummaryTier

__all__ = ["MAX_DECISION_CHARS", "DecisionTool"]

MAX_DECISION_CHARS = 2_000


class DecisionTool:
    """Pins one decision of the agent's (see module docstring)."""

    name = "record_decision"
    policy_type: PolicyType = "builtin"

    def __init__(self, session: SessionHandle, tier: SummaryTier) -> None:
        self._session = session
        self._tier = tier

    def definition(self) -> ToolDefinition:
        """The schema the model sees."""
        return ToolDefinition(
            name=self.name,
            description=(
                "Record a decision you or the user made that must hold for the rest of this "
                "session (a constraint, a chosen approach, an identifier). It is kept in every "
                "later request and never summarised away. One short sentence; not for notes."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "decision": {"type": "string", "description": "The decision and why."}
                },
                "required": ["decision"],
            },
        )

    def invocation(self, args: Mapping[str, Any]) -> str:
        """``record_decision`` (policy patterns: ``builtin:record_decision``)."""
        return self.name

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Pin the decision durably; refused (a result the model reads) when too long."""
        text = args.get("decision")
        if not isinstance(text, str) or not text.strip():
            return ToolOutcome(False, "Error: 'decision' must be a non-empty string")
        if len(text) > MAX_DECISION_CHARS:
            return ToolOutcome(
                False, f"Error: a decision may have {MAX_DECISION_CHARS} characters; shorten it"
            )
        try:
            self._tier.check_pin(text.strip())
        except PinRefusedError as exc:
            detail = str(exc).replace("{id}", self._session.session_id)
            return ToolOutcome(False, f"Error: not recorded: {detail}")
        pin_id = await self._session.pin(text.strip(), kind="decision", source="agent")
        self._tier.pinned("decision", text.strip(), pin_id)
        return ToolOutcome(True, f"Recorded ({pin_id}); it stays in every later request.")
