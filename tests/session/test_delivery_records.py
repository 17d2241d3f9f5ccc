"""``record_delivery``: a reply handed to its chat is recorded once, durably, and read back."""

from __future__ import annotations

import json
from pathlib import Path

from duragent.session import NewSession, RegistrySettings, SessionRegistry
from duragent.store import SessionStore


async def open_registry(root: Path) -> SessionRegistry:
    registry = SessionRegistry(SessionStore(root), RegistrySettings(ask_timeout=10))
    await registry.open()
    return registry


async def test_a_delivery_is_on_disk_and_read_back_after_a_restart(tmp_path: Path) -> None:
    registry = await open_registry(tmp_path)
    try:
        sid = await registry.create(NewSession(agent="a", gateway="telegram", gateway_chat_id="9"))
        session = registry.handle(sid)
        await session.add_user_message("hi")
        reply_seq = await session.add_assistant_response("hello", durable=True)
        seq = await session.record_delivery(reply_seq, "telegram:9")
    finally:
        await registry.aclose()
    last = json.loads((tmp_path / sid / "events.jsonl").read_text().splitlines()[-1])
    assert (last["seq"], last["type"]) == (seq, "delivery")
    assert (last["reply_seq"], last["target"]) == (reply_seq, "telegram:9")
    registry = await open_registry(tmp_path)
    try:
        assert (await registry.info(sid)).last_delivered_seq == reply_seq
    finally:
        await registry.aclose()


async def test_recording_the_same_reply_twice_writes_it_once(tmp_path: Path) -> None:
    registry = await open_registry(tmp_path)
    try:
        sid = await registry.create(NewSession(agent="a"))
        session = registry.handle(sid)
        await session.add_user_message("hi")
        reply_seq = await session.add_assistant_response("hello", durable=True)
        assert await session.record_delivery(reply_seq, "telegram:9") is not None
        assert await session.record_delivery(reply_seq, "telegram:9") is None
        events = await session.events()
    finally:
        await registry.aclose()
    assert [e.type for e in events].count("delivery") == 1


async def test_a_new_session_has_delivered_nothing(tmp_path: Path) -> None:
    registry = await open_registry(tmp_path)
    try:
        sid = await registry.create(NewSession(agent="a"))
        assert (await registry.info(sid)).last_delivered_seq == 0
    finally:
        await registry.aclose()
