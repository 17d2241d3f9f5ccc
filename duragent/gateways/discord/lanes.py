"""``ChatLanes``: a chat's events handled one at a time, in the order they arrived.

discord.py runs each event handler in a task of its own, so two messages of one chat could
reach the kit out of order (the second overtaking the first while it waits on the disk).
A lane per chat is a FIFO lock: tasks take their turn in the order they asked, which is the
order discord.py received the events. Different chats never wait for each other, and a lane
nobody holds or waits for is forgotten, so thousands of chats cost nothing at rest.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

__all__ = ["ChatLanes"]


class ChatLanes:
    """One FIFO lock per chat id, dropped when unused (see module docstring)."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}

    def __len__(self) -> int:
        """Chats with an event being handled or waiting."""
        return len(self._locks)

    @asynccontextmanager
    async def turn(self, chat_id: str) -> AsyncIterator[None]:
        """Wait for the chat's earlier events, then hold its lane for the block."""
        lock, users = self._locks.setdefault(chat_id, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._locks[chat_id]
