"""Finding and ending a chat's session without creating one (a chat's ``/status``, ``/reset``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from duragent.core.snapshot import SessionStatus
from duragent.session import NewSession, RegistrySettings, SessionRegistry
from duragent.store import SessionStore

KEY = ("telegram", "42", "bot")


def new_chat(agent: str = "bot", chat_id: str = "42") -> NewSession:
    return NewSession(agent=agent, gateway="telegram", gateway_chat_id=chat_id)


async def open_registry(root: Path) -> SessionRegistry:
    registry = SessionRegistry(SessionStore(root), RegistrySettings(ask_timeout=10))
    await registry.open()
    return registry


async def test_a_chat_without_a_session_has_none_and_nothing_is_created(tmp_path: Path) -> None:
    registry = await open_registry(tmp_path)
    try:
        assert await registry.chat_session(KEY) is None
        assert await registry.end_chat(KEY) is None
        listed = await registry.list_sessions()
    finally:
        await registry.aclose()
    assert listed == []


async def test_ending_a_chat_completes_its_session_and_the_next_message_gets_a_new_one(
    tmp_path: Path,
) -> None:
    registry = await open_registry(tmp_path)
    try:
        first = await registry.for_chat(KEY, new_chat())
        ended = await registry.end_chat(KEY)
        gone = await registry.chat_session(KEY)
        second = await registry.for_chat(KEY, new_chat())
        status = (await registry.info(first)).status
    finally:
        await registry.aclose()
    assert ended == first
    assert gone is None
    assert second != first
    assert status is SessionStatus.COMPLETED
    assert (tmp_path / first / "events.jsonl").exists()  # files are kept


async def test_an_ended_chat_stays_ended_after_a_restart(tmp_path: Path) -> None:
    registry = await open_registry(tmp_path)
    try:
        await registry.for_chat(KEY, new_chat())
        await registry.end_chat(KEY)
    finally:
        await registry.aclose()
    registry = await open_registry(tmp_path)
    try:
        assert await registry.chat_session(KEY) is None
    finally:
        await registry.aclose()


async def test_every_agent_serving_a_chat_is_listed(tmp_path: Path) -> None:
    registry = await open_registry(tmp_path)
    try:
        bot = await registry.for_chat(KEY, new_chat())
        helper = await registry.for_chat(("telegram", "42", "helper"), new_chat("helper"))
        await registry.for_chat(("telegram", "43", "bot"), new_chat(chat_id="43"))
        listed = sorted(registry.sessions_of_chat("telegram", "42"))
    finally:
        await registry.aclose()
    assert listed == [("bot", bot), ("helper", helper)]


async def test_a_reset_racing_first_messages_never_hands_out_the_ended_session(
    tmp_path: Path,
) -> None:
    registry = await open_registry(tmp_path)
    try:
        old = await registry.for_chat(KEY, new_chat())
        ended, *found = await asyncio.gather(
            registry.end_chat(KEY), *(registry.for_chat(KEY, new_chat()) for _ in range(10))
        )
        current = await registry.chat_session(KEY)
        statuses = {sid: (await registry.info(sid)).status for sid in set(found) if sid}
    finally:
        await registry.aclose()
    assert ended == old
    for sid, status in statuses.items():
        assert sid == old or status is SessionStatus.ACTIVE
    assert current is not None
    assert current != old
