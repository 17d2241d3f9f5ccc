"""The session listing names each session's chat the same whether its actor runs or not."""

from __future__ import annotations

from pathlib import Path

from duragent.session import NewSession, RegistrySettings, SessionRegistry
from duragent.store import SessionStore

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
