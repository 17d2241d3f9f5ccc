"""The ``SessionReader`` port of the ``session`` tool, implemented over the registry."""

from __future__ import annotations

from duragent.session.history import events_to_messages
from duragent.session.registry import SessionNotFoundError, SessionRegistry
from duragent.tools.base import SessionSummary

__all__ = ["RegistrySessionReader"]


class RegistrySessionReader:
    """Lets a tool list and read sibling sessions without importing the session layer."""

    def __init__(self, registry: SessionRegistry) -> None:
        self._registry = registry

    async def list_sessions(self, agent: str, limit: int) -> list[SessionSummary]:
        """Non-completed sessions of ``agent``, newest first."""
        found = await self._registry.list_sessions(limit=1000)
        return [
            SessionSummary(
                session_id=s["session_id"], status=s["status"], updated_at=s["updated_at"]
            )
            for s in found
            if s["agent"] == agent and s["status"] != "completed"
        ][:limit]

    async def read_messages(self, agent: str, session_id: str, limit: int) -> list[tuple[str, str]]:
        """The last ``limit`` user/assistant messages of ``agent``'s session ``session_id``.

        Another agent's session raises the same ``SessionNotFoundError`` as a missing one.
        """
        info = await self._registry.info(session_id)
        if info.agent != agent:
            raise SessionNotFoundError(session_id)
        events = await self._registry.handle(session_id).events(include_archive=True)
        messages = events_to_messages(events, include_tools=False)
        return [(m["role"], str(m.get("content", ""))) for m in messages[-limit:]]
