"""The ``SessionReader`` port of the ``session`` tool, implemented over the registry.

Scope comes first: a caller that does not reach the whole agent (``Caller.reaches_all``) is
given the sessions of its own chat only (``gateway`` + ``gateway_chat_id`` of the session equal
the caller's chat; a chat has several over time: ``/reset``, TTL). The filter is applied to the
listing before anything is read, so another chat's session and a session that does not exist
take the same path and raise the same ``SessionNotFoundError``.
"""

from __future__ import annotations

from typing import Any

from duragent.core.caller import Caller, ChatRef
from duragent.session.history import events_to_messages
from duragent.session.registry import SessionNotFoundError, SessionRegistry
from duragent.tools.base import SessionSummary

__all__ = ["SCANNED", "RegistrySessionReader"]

SCANNED = 1000
"""How many of the newest sessions (all agents) a listing looks through."""


def chat_of(entry: dict[str, Any]) -> ChatRef | None:
    """The chat a listing entry serves (None: an HTTP/CLI session, nobody's chat)."""
    gateway, chat_id = entry.get("gateway"), entry.get("gateway_chat_id")
    return ChatRef(gateway, chat_id) if gateway and chat_id else None


class RegistrySessionReader:
    """Lets a tool list and read sibling sessions without importing the session layer."""

    def __init__(self, registry: SessionRegistry) -> None:
        self._registry = registry

    async def _reachable(self, agent: str, caller: Caller) -> list[dict[str, Any]]:
        """``agent``'s listed sessions that ``caller`` may reach, newest first."""
        found = await self._registry.list_sessions(limit=SCANNED)
        return [s for s in found if s["agent"] == agent and caller.may_reach(chat_of(s))]

    async def list_sessions(
        self, agent: str, limit: int, *, caller: Caller
    ) -> list[SessionSummary]:
        """Non-completed sessions of ``agent`` that ``caller`` may reach, newest first."""
        return [
            SessionSummary(
                session_id=s["session_id"], status=s["status"], updated_at=s["updated_at"]
            )
            for s in await self._reachable(agent, caller)
            if s["status"] != "completed"
        ][:limit]

    async def read_messages(
        self, agent: str, session_id: str, limit: int, *, caller: Caller
    ) -> list[tuple[str, str]]:
        """The last ``limit`` user/assistant messages of ``agent``'s session ``session_id``.

        Another agent's session, and for a chat caller another chat's session (or one older
        than the newest ``SCANNED``), raise the same ``SessionNotFoundError`` as a missing one.
        """
        if not caller.reaches_all:
            reachable = {s["session_id"] for s in await self._reachable(agent, caller)}
            if session_id not in reachable:
                raise SessionNotFoundError(session_id)
        info = await self._registry.info(session_id)
        if info.agent != agent:
            raise SessionNotFoundError(session_id)
        events = await self._registry.handle(session_id).events(include_archive=True)
        messages = events_to_messages(events, include_tools=False)
        return [(m["role"], str(m.get("content", ""))) for m in messages[-limit:]]
