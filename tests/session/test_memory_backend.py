"""The session layer runs on any ``SessionStorage``: here the in-memory backend, no disk."""

from __future__ import annotations

import pytest

from duragent.core.messages import Role
from duragent.session import NewSession, RegistrySettings, SessionRegistry
from duragent.session.actor import SessionQuarantinedError
from duragent.store import MemorySessionStore


async def test_a_session_in_memory_survives_its_actor_stopping() -> None:
    store = MemorySessionStore()
    reg = SessionRegistry(store, RegistrySettings(ask_timeout=10))
    await reg.open()
    try:
        sid = await reg.create(NewSession(agent="a", gateway="http", gateway_chat_id="c1"))
        for i in range(60):  # past a checkpoint: snapshot and rollover happen
            await reg.handle(sid).add_user_message(content=f"q{i}")
        await reg.stop(sid)
        assert not reg.is_live(sid)
        messages = await reg.handle(sid).messages()  # a new actor loads it back
        full = await reg.handle(sid).events(include_archive=True)
        listed = await reg.list_sessions()
    finally:
        await reg.aclose()
    assert [m.content for m in messages if m.role is Role.USER] == [f"q{i}" for i in range(60)]
    assert [e.seq for e in full] == list(range(1, 62))
    assert store.event_log(sid).read_archive()  # rolled over into the archive
    assert [entry["session_id"] for entry in listed] == [sid]
    assert store.chats.get(("http", "c1", "a")) == sid


async def test_a_quarantined_session_in_memory_is_refused_with_its_reason() -> None:
    store = MemorySessionStore()
    reg = SessionRegistry(store, RegistrySettings(ask_timeout=10))
    await reg.open()
    try:
        sid = await reg.create(NewSession(agent="a"))
        await reg.stop(sid)
        store.quarantine(sid, "checked by hand")
        with pytest.raises(SessionQuarantinedError, match="checked by hand"):
            await reg.handle(sid).info()
        listed = await reg.list_sessions()
    finally:
        await reg.aclose()
    assert [(e["session_id"], e["status"]) for e in listed] == [(sid, "quarantined")]
