"""The session tool's port over the real registry: an agent sees only its own sessions."""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.session import NewSession, SessionNotFoundError, SessionRegistry
from duragent.session.reader import RegistrySessionReader
from duragent.store import SessionStore


async def test_an_agent_reads_its_own_sessions_and_never_another_agents(tmp_path: Path) -> None:
    reg = SessionRegistry(SessionStore(tmp_path))
    await reg.open()
    try:
        mine = await reg.create(NewSession(agent="alpha"))
        theirs = await reg.create(NewSession(agent="beta"))
        await reg.handle(mine).add_user_message(content="my note")
        await reg.handle(theirs).add_user_message(content="beta's secret")
        reader = RegistrySessionReader(reg)

        assert await reader.read_messages("alpha", mine, 10) == [("user", "my note")]
        with pytest.raises(SessionNotFoundError):
            await reader.read_messages("alpha", theirs, 10)
        with pytest.raises(SessionNotFoundError):
            await reader.read_messages("alpha", "session_does_not_exist", 10)
        listed = await reader.list_sessions("alpha", 10)
    finally:
        await reg.aclose()
    assert [s.session_id for s in listed] == [mine]
