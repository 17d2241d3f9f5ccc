"""``DirectDispatcher``: the production ``SessionQueues``, one turn per message, for kit tests.

The memory adapter of the chat contract suite runs every message through the same path as
the platforms' gateways (``SessionQueues.offer`` → ``TurnRunner.submit`` → the session's line
→ ``ChatTurns.answer``), so what the suite checks is what production does. Only the queue's
rules are fixed: each message gets a turn and a reply of its own, in arrival order
(``sequential``, no debounce), whatever the agent's access block says, so a contract test
never waits out a debounce window and reads one reply per message. The queue's own rules
(batch, drop, overflow, debounce) are ``tests/frontkit/test_queue.py``'s.
"""

from __future__ import annotations

from duragent.agents.spec import DebounceSpec, QueueSpec
from duragent.frontkit import ChatTurns, Inbound
from duragent.frontkit.queue import SessionQueues

ONE_TURN_EACH = QueueSpec(mode="sequential", debounce=DebounceSpec(enabled=False))
"""Every message a turn of its own, in arrival order, none held back."""


class DirectDispatcher:
    """``SessionQueues`` with ``ONE_TURN_EACH`` (see module docstring)."""

    def __init__(self, chat: ChatTurns) -> None:
        self.queues = SessionQueues(chat.turns, chat, chat.outbound, chat.tasks)

    async def offer(self, session_id: str, inbound: Inbound, queue: QueueSpec) -> None:
        await self.queues.offer(session_id, inbound, ONE_TURN_EACH)  # not ``queue``: see above
