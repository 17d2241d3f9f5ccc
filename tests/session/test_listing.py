"""The session listing names each session's chat the same whether its actor runs or not."""

from __future__ import annotations

from pathlib import Path

from duragent.session import NewSession, RegistrySettings, SessionInfo, SessionRegistry
from duragent.session.listing import SessionListing
from duragent.store import LeaseHeldError, SessionStore

CHAT = ("gateway", "gateway_chat_id", "gateway_chat_type")


async def test_a_chat_sessions_front_end_chat_and_chat_type_are_listed_live_and_from_disk(
    tmp_path: Path,
) -> None:
    reg = SessionRegistry(SessionStore(tmp_path), RegistrySettings(ask_timeout=10))
    await reg.open()
    new = NewSession(
        agent="a", gateway="telegram", gateway_chat_id="42", gateway_chat_type="private"
    )
    try:
        chat_sid = await reg.create(new)
        api_sid = await reg.create(NewSession(agent="a"))
        live = {e["session_id"]: e for e in await reg.list_sessions()}
        for sid in (chat_sid, api_sid):
            await reg.stop(sid)
        assert not reg.is_live(chat_sid)
        from_disk = {e["session_id"]: e for e in await reg.list_sessions()}
    finally:
        await reg.aclose()
    for listed in (live, from_disk):
        assert [listed[chat_sid][k] for k in CHAT] == ["telegram", "42", "private"]
        assert [listed[api_sid][k] for k in CHAT] == [None, None, None]


async def test_a_session_another_node_took_meanwhile_is_listed_from_the_store(
    tmp_path: Path,
) -> None:
    """It was live here when listed, and another node held it by the time it was asked: the
    TTL sweep failed whole on it, every time (the month of strangers with two nodes)."""
    store = SessionStore(tmp_path)
    reg = SessionRegistry(store, RegistrySettings(ask_timeout=10))
    await reg.open()
    try:
        sid = await reg.create(NewSession(agent="a", gateway="telegram", gateway_chat_id="42"))
        await reg.stop(sid)
    finally:
        await reg.aclose()

    async def taken(session_id: str) -> SessionInfo:
        raise LeaseHeldError(session_id, "b", 3.0)

    listing = SessionListing(store, is_live=lambda _: True, info=taken)
    [entry] = await listing.sessions(10)
    assert (entry["session_id"], entry["gateway_chat_id"]) == (sid, "42")
