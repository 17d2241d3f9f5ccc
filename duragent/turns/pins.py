"""The room an agent gives its sessions' pins, and the check before a pin is recorded.

Pins (``specs/202611240835.summaries.md``, item 3) go with every request, in the reference
block, and all of them together may take at most ``pinned_share`` of the history budget. A
pin that passes it cannot be sent: every later turn would fail. So the room is one number
per agent — ``pinned_share`` of the history budget its *static* split leaves (system prompt
and tool definitions as ``duragent doctor`` counts them) — and the same number is used when
a pin is offered (HTTP, ``/pin``, ``record_decision``: refused with the limit and the fix)
and when a turn renders the pins. A turn's own extras (a group's recent chatter, a tool the
runtime adds) never make yesterday's accepted pin fail today; the request still fits its
limit, because Layer 2 gives history what the block leaves.

What the check cannot prevent — the agent's window shrunk or its prompt grew after the pins
were made — the turn reports as ``PinnedTooLargeError`` naming every pin and how to unpin it
(a 409 on HTTP, not the model's 502).
"""

from __future__ import annotations

from pathlib import Path

from duragent.agents import Agent
from duragent.context.summaries import check_new_pin, history_budget
from duragent.context.tokens import counter_for_model
from duragent.session import SessionHandle
from duragent.turns.agent_budget import agent_budget, budget_settings
from duragent.turns.summaries import agent_summary_settings

__all__ = ["MIN_PIN_ROOM", "PinRooms", "add_pin", "pin_room"]

MIN_PIN_ROOM = 64
"""The least room pins get, however small the window (a sentence or two)."""


def pin_room(agent: Agent, workspace_dir: Path) -> int:
    """Tokens all pins of one of ``agent``'s sessions may take (see module docstring)."""
    settings = budget_settings(agent)
    split = agent_budget(agent, workspace_dir)
    share = agent_summary_settings(agent, settings.window).pinned_share
    history = history_budget(settings, split.system_prompt + split.tools)
    return max(MIN_PIN_ROOM, int(share * history))


class PinRooms:
    """``pin_room`` per agent, computed once per loaded definition (tools are built for it).

    Keyed by the agent's name and held with the object it was computed for: a reloaded
    agent.yaml is another object, so its room is computed again.
    """

    def __init__(self, workspace_dir: Path) -> None:
        self._workspace_dir = workspace_dir
        self._rooms: dict[str, tuple[Agent, int]] = {}

    def room(self, agent: Agent) -> int:
        """``agent``'s pin room."""
        cached = self._rooms.get(agent.name)
        if cached is not None and cached[0] is agent:
            return cached[1]
        room = pin_room(agent, self._workspace_dir)
        self._rooms[agent.name] = (agent, room)
        return room


async def add_pin(
    session: SessionHandle, agent: Agent, rooms: PinRooms, text: str, *, kind: str, source: str
) -> str:
    """Pin ``text`` durably if the session's pins still fit ``agent``'s room; its id.

    Raises ``PinRefusedError`` (nothing recorded) when it would not fit. Two pins offered at
    the same moment may both pass; the turn then says which to remove (see module docstring).
    """
    memory = await session.memory()
    check_new_pin(
        [(p.kind, p.text) for p in memory.pins],
        kind,
        text,
        counter_for_model(agent.model.name),
        rooms.room(agent),
        budget_settings(agent).window,
    )
    return await session.pin(text, kind=kind, source=source)
