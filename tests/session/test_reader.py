"""The session tool's port over the real registry: an agent sees only its own sessions."""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.core.caller import OPERATOR, Caller, ChatRef
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

        assert await reader.read_messages("alpha", mine, 10, caller=OPERATOR) == [
            ("user", "my note")
        ]
        with pytest.raises(SessionNotFoundError):
            await reader.read_messages("alpha", theirs, 10, caller=OPERATOR)
        with pytest.raises(SessionNotFoundError):
            await reader.read_messages("alpha", "session_does_not_exist", 10, caller=OPERATOR)
        listed = await reader.list_sessions("alpha", 10, caller=OPERATOR)
    finally:
        await reg.aclose()
    assert [s.session_id for s in listed] == [mine]


async def test_a_chat_is_given_only_sessions_whose_gateway_and_chat_id_are_its_own(
    tmp_path: Path,
) -> None:
    reg = SessionRegistry(SessionStore(tmp_path))
    await reg.open()
    try:
        ours = await reg.create(NewSession(agent="alpha", gateway="telegram", gateway_chat_id="1"))
        same_id_elsewhere = await reg.create(
            NewSession(agent="alpha", gateway="discord", gateway_chat_id="1")
        )
        await reg.handle(same_id_elsewhere).add_user_message(content="discord's secret")
        member = Caller(role="member", chat=ChatRef("telegram", "1"), sender_id="9")
        reader = RegistrySessionReader(reg)
        listed = await reader.list_sessions("alpha", 10, caller=member)
        with pytest.raises(SessionNotFoundError):
            await reader.read_messages("alpha", same_id_elsewhere, 10, caller=member)
        await reg.stop(ours)  # described from its snapshot header now, not by its actor
        from_disk = await reader.list_sessions("alpha", 10, caller=member)
    finally:
        await reg.aclose()
    assert [s.session_id for s in listed] == [ours]
    assert [s.session_id for s in from_disk] == [ours]
