"""The registry never asks the store on the event loop: with PostgreSQL each ask is a query."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from duragent.session import NewSession, SessionNotFoundError, SessionRegistry
from duragent.store import MemorySessionStore


class WatchedStore(MemorySessionStore):
    """The memory store, noting which thread asked each lookup (a network call elsewhere)."""

    def __init__(self) -> None:
        super().__init__()
        self.askers: list[tuple[str, int]] = []

    def _noted(self, name: str) -> None:
        self.askers.append((name, threading.get_ident()))

    def exists(self, session_id: str) -> bool:
        self._noted("exists")
        return super().exists(session_id)

    def quarantine_reason(self, session_id: str) -> str | None:
        self._noted("quarantine_reason")
        return super().quarantine_reason(session_id)

    def list_ids(self) -> list[str]:
        self._noted("list_ids")
        return super().list_ids()

    def quarantined(self) -> list[str]:
        self._noted("quarantined")
        return super().quarantined()

    def header(self, session_id: str, *, quarantined: bool = False) -> dict[str, Any] | None:
        self._noted("header")
        return super().header(session_id, quarantined=quarantined)


async def test_lookups_of_sessions_run_in_threads_not_on_the_loop() -> None:
    store = WatchedStore()
    registry = SessionRegistry(store)
    await registry.open()
    loop_thread = threading.get_ident()
    try:
        sid = await registry.create(NewSession(agent="a"))
        await registry.stop(sid)
        await registry.info(sid)  # a stopped session starts again: exists
        with pytest.raises(SessionNotFoundError):
            await registry.info("missing")  # exists, then quarantine_reason
        await registry.list_sessions()  # list_ids, quarantined, header
        await registry.delete(sid)  # exists
    finally:
        await registry.aclose()
    asked = {name for name, _ in store.askers}
    assert {"exists", "quarantine_reason", "list_ids", "quarantined"} <= asked
    assert [name for name, thread in store.askers if thread == loop_thread] == []
