"""``DirectDispatcher``: the SIMPLE ``Dispatcher``, for the kit's own tests only.

Records each message durably (``add_user_message``, de-duplicated by platform id) before
``offer`` returns, then runs the session's turns one after another in the background through
``ChatTurns``. No debounce, no batching, no overflow rules, no recovery: the real one is the
queue helper's ``SessionQueues``. A turn finds its message already recorded (the runner
resumes an unanswered recorded message instead of adding it again); a message the previous
turn already answered (it saw it in the history) comes back ``Duplicate`` and sends nothing.
"""

from __future__ import annotations

import asyncio
import contextlib

from duragent.agents.spec import QueueSpec
from duragent.frontkit import ChatTurns, Inbound


class DirectDispatcher:
    """Record, then run in arrival order per session (see module docstring)."""

    def __init__(self, chat: ChatTurns) -> None:
        self._chat = chat
        self._last: dict[str, asyncio.Task[None]] = {}
        self.offered: list[tuple[str, Inbound, QueueSpec]] = []

    async def offer(self, session_id: str, inbound: Inbound, queue: QueueSpec) -> None:
        await self._chat.turns.accept(
            session_id,
            inbound.text,
            sender_id=inbound.sender_id,
            sender_name=inbound.sender_name,
            platform_message_id=inbound.message_id,
            steer=False,
        )
        self.offered.append((session_id, inbound, queue))
        previous = self._last.get(session_id)
        self._last[session_id] = self._chat.tasks.spawn(
            self._after(previous, inbound), name=f"direct-{session_id}"
        )

    async def _after(self, previous: asyncio.Task[None] | None, inbound: Inbound) -> None:
        if previous is not None:
            with contextlib.suppress(Exception):  # its failure is logged by the task owner
                await asyncio.shield(previous)
        await self._chat.receive(inbound)
