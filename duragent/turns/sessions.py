"""``SessionQueries``: what a front end may read of sessions, and nothing it could write.

Front ends (``gateways``, ``frontkit``, ``scheduler``) never hold the session registry nor a
``SessionHandle``: a write behind the turn runner's back could land between a turn's
records (issue 35). Everything they write goes through ``TurnRunner`` (turns, notes,
deliveries, pins, resets); everything they read comes from here. import-linter forbids those
packages to import ``duragent.session``, so the data types they read are re-exported here.
"""

from __future__ import annotations

from typing import Any

from duragent.core.approval import PendingApproval
from duragent.core.events import Event
from duragent.core.messages import Message
from duragent.session import (
    ChatProgress,
    SessionAgentMismatchError,
    SessionEndedError,
    SessionInfo,
    SessionNotFoundError,
    SessionQuarantinedError,
    SessionRegistry,
    events_to_messages,
)
from duragent.session.memory_ops import MemoryView
from duragent.store import ChatKey, WriteHealth

__all__ = [
    "ChatProgress",
    "MemoryView",
    "PendingApproval",
    "SessionAgentMismatchError",
    "SessionEndedError",
    "SessionInfo",
    "SessionNotFoundError",
    "SessionQuarantinedError",
    "SessionQueries",
    "events_to_messages",
]


class SessionQueries:
    """Read-only questions about sessions, answered by their actors or their files."""

    __slots__ = ("_registry",)

    def __init__(self, registry: SessionRegistry) -> None:
        self._registry = registry

    async def info(self, session_id: str) -> SessionInfo:
        """The session's state (``SessionNotFoundError`` when there is none)."""
        return await self._registry.info(session_id)

    async def events(
        self, session_id: str, *, after_seq: int = 0, include_archive: bool = False
    ) -> list[Event]:
        """The session's events after ``after_seq``; the archive's too when asked."""
        return await self._registry.handle(session_id).events(
            after_seq=after_seq, include_archive=include_archive
        )

    async def messages(self, session_id: str) -> list[Message]:
        """The conversation as the next turn's model would start from it."""
        return await self._registry.handle(session_id).messages()

    async def memory(self, session_id: str) -> MemoryView:
        """The session's pins, task and summary."""
        return await self._registry.handle(session_id).memory()

    async def recent_silent(
        self, session_id: str, max_messages: int, max_age_hours: float
    ) -> list[str]:
        """A group's recent chatter nobody answered (the context buffer), oldest first."""
        return await self._registry.handle(session_id).recent_silent(max_messages, max_age_hours)

    async def progress(self, session_id: str) -> ChatProgress:
        """Where a chat's session stands (a gateway's recovery at start)."""
        return await self._registry.progress(session_id)

    async def list_sessions(self, *, limit: int = 100) -> list[dict[str, Any]]:
        """Newest sessions first, unloadable ones included with their reason."""
        return await self._registry.list_sessions(limit=limit)

    async def chat_session(self, key: ChatKey) -> str | None:
        """The chat's current session, or None (none yet, ended or unusable)."""
        return await self._registry.chat_session(key)

    def chat_sessions(self, gateway: str) -> list[tuple[str, str]]:
        """``(chat_id, session_id)`` of every chat of ``gateway``."""
        return self._registry.chat_sessions(gateway)

    async def sessions_of_chat_now(self, gateway: str, chat_id: str) -> list[tuple[str, str]]:
        """``(agent, session_id)`` of every session mapped for one chat, as stored now."""
        return await self._registry.sessions_of_chat_now(gateway, chat_id)

    @property
    def store_health(self) -> WriteHealth:
        """Whether the session store takes writes now (``/readyz``)."""
        return self._registry.store.health
