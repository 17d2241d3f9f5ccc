"""A chat's new session mapped once across nodes: the first message at two nodes at once.

``SessionRegistry.for_chat`` finds the chat unmapped (or mapped to a session it cannot use),
creates a session and maps the chat to it. On one node the chat's lock makes that happen
once. With a store several nodes share, two nodes can both find the chat unmapped and both
create one; an unconditional write would leave the chat with whichever wrote last while the
other node answers from a session nobody finds again. So the mapping is a conditional insert
(``SharedStorage.map_chat``: only where the chat still maps to what this node found): one
node wins, and the other deletes the session it just made (nothing but its creation is in
it) and serves the chat from the winner's session, which its owner's lease routes to it.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from typing import Literal, Protocol

from duragent.store import ChatKey, SessionStorage, SharedStorage

__all__ = ["ANY_MAPPING", "AnyMapping", "SessionMaker", "map_created_session"]

log = logging.getLogger(__name__)


class AnyMapping(enum.Enum):
    """Map the chat whatever it maps now (a session made on purpose, e.g. over HTTP)."""

    ANY = "any"


ANY_MAPPING: Literal[AnyMapping.ANY] = AnyMapping.ANY


class SessionMaker(Protocol):
    """What the mapping needs of the node's session registry (``session.SessionRegistry``).

    A port, not the registry itself: ``cluster`` sits below ``session`` (layers contract).
    """

    @property
    def store(self) -> SessionStorage:
        """Where the registry's sessions and the chat map are stored."""
        ...

    async def delete(self, session_id: str) -> None:
        """Stop the session and delete it."""
        ...


async def map_created_session(
    registry: SessionMaker,
    key: ChatKey,
    session_id: str,
    replacing: str | Literal[AnyMapping.ANY] | None,
) -> str:
    """Map ``key`` to the session just made; the session that serves the chat.

    ``replacing``: what the caller found the chat mapped to (None: nothing), or
    ``ANY_MAPPING``. Losing the race to another node deletes ``session_id``.
    """
    store = registry.store
    if not isinstance(store, SharedStorage) or replacing is AnyMapping.ANY:
        await asyncio.to_thread(store.chats.set, key, session_id)
        return session_id
    winner = await asyncio.to_thread(store.map_chat, key, session_id, replacing)
    if winner != session_id:
        log.info("chat %s: another node made its session %s first; using it", key, winner)
        try:
            await registry.delete(session_id)
        except Exception as exc:  # an unmapped empty session is harmless; the chat goes on
            log.warning("chat %s: the unused session %s was not deleted: %s", key, session_id, exc)
    return winner
