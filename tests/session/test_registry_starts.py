"""One actor per session, however many callers ask for it while it starts.

A caller that found no live actor looks the session up in the store (a query, in
PostgreSQL) before starting one. Another caller could start the actor, and finish, during
that look; the first then started a second actor for the same session. Both wrote: with
PostgreSQL they shared the node's lease, so the fence let both through, and the session's
events met a seq conflict ("already has an event with one of the seqs"): turns failed (the
month of strangers with two nodes, issue 40, where a node took over many sessions at once).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from duragent.session import NewSession, RegistrySettings, SessionRegistry
from duragent.store import SessionStore
from tests.polling import eventually


class SlowFirstLook(SessionStore):
    """A store whose first ``exists`` after ``arm`` waits for ``release`` (a slow query)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.armed = False
        self.looking = threading.Event()
        self.release = threading.Event()
        self.loads = 0

    def remove_stale_temp_files(self, session_id: str) -> None:
        self.loads += 1  # once per actor that loads the session (``Journal.load``)
        super().remove_stale_temp_files(session_id)

    def exists(self, session_id: str) -> bool:
        if self.armed:
            self.armed = False
            self.looking.set()
            self.release.wait(10)
        return super().exists(session_id)


async def test_a_session_started_during_another_callers_look_is_not_started_twice(
    tmp_path: Path,
) -> None:
    store = SlowFirstLook(tmp_path)
    registry = SessionRegistry(store, RegistrySettings())
    await registry.open()
    try:
        sid = await registry.create(NewSession(agent="a"))
        await registry.stop(sid)  # on disk, no actor: the next ask starts one
        store.armed, store.loads = True, 0
        slow = asyncio.create_task(registry.info(sid))  # looks at the store, slowly
        assert await eventually(store.looking.is_set)
        await registry.info(sid)  # another caller starts the actor meanwhile
        store.release.set()
        await slow
    finally:
        await registry.aclose()
    assert store.loads == 1
