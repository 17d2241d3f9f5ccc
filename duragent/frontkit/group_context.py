"""The block a triggered group turn reads: what the group said before the bot was mentioned.

Group chatter the agent was not addressed in is kept durably in the session's context buffer
(``TurnRunner.record_unanswered``: a ``silent_message`` event and a bounded ring in
``state.yaml``), never in the model's history. When a message does address the agent, the
newest entries (at most ``context_buffer.max_messages``, at most ``max_age_hours`` old) are
read and given to that turn as one block, quoted in a user message right before the message
that addressed the agent (people wrote it: never system text, ``context.quoting``), so they
count against the context budget like the prompt and are never stored as messages.

The buffer is read, not emptied, as the reference does: a second mention within the age limit
sees the same chatter again (plus whatever came since).
"""

from __future__ import annotations

from collections.abc import Sequence

from duragent.agents.spec import ContextBufferSpec
from duragent.turns import SessionQueries

__all__ = ["GROUP_CONTEXT_HEADER", "group_context_block", "read_group_context"]

GROUP_CONTEXT_HEADER = "Recent group conversation before you were mentioned:\n\n"


def group_context_block(lines: Sequence[str]) -> str | None:
    """The block for ``lines`` (each ``<label>: <text>``), or None when there are none."""
    if not lines:
        return None
    return GROUP_CONTEXT_HEADER + "".join(f"{line}\n" for line in lines)


async def read_group_context(
    sessions: SessionQueries, session_id: str, spec: ContextBufferSpec
) -> str | None:
    """The session's buffered chatter as a block, within ``spec``'s limits (None: nothing)."""
    lines = await sessions.recent_silent(session_id, spec.max_messages, spec.max_age_hours)
    return group_context_block(lines)
