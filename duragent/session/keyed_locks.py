"""One asyncio lock per key, kept only while someone holds it or waits for it.

The registry serialises the first messages of a chat with a lock per chat. A plain
``dict.setdefault(key, Lock())`` keeps one lock for every chat ever seen, which over months
of a busy bot is unbounded growth; here an entry is dropped as soon as no task holds or
waits on it, so the map is as large as the number of chats being resolved right now.
Everything runs on one event loop, so the counting needs no lock of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager
from typing import Generic, TypeVar

__all__ = ["KeyedLocks"]

K = TypeVar("K", bound=Hashable)


class _KeyLock:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0  # tasks holding or waiting on ``lock``


class KeyedLocks(Generic[K]):
    """Mutual exclusion per key; memory bounded by the keys in use."""

    def __init__(self) -> None:
        self._entries: dict[K, _KeyLock] = {}

    def __len__(self) -> int:
        """How many keys are held or waited on now."""
        return len(self._entries)

    @asynccontextmanager
    async def hold(self, key: K) -> AsyncIterator[None]:
        """Hold ``key``'s lock for the block (a cancelled wait also lets go of the entry)."""
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _KeyLock()
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0:
                del self._entries[key]
