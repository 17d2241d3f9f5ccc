"""``TurnRunner.session_for_chat``: one session per chat key, however many first messages race."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.turns.turn_fixtures import harness


def session_folders(root: Path) -> list[Path]:
    sessions = root / ".duragent" / "sessions"
    return [p for p in sessions.iterdir() if p.is_dir() and not p.name.startswith("_")]


async def test_fifty_concurrent_first_messages_of_one_chat_make_exactly_one_session(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as h:
        ids = await asyncio.gather(
            *(h.runner.session_for_chat("telegram", "42", "bot") for _ in range(50))
        )
        info = await h.registry.info(ids[0])
    assert len(set(ids)) == 1
    assert len(session_folders(tmp_path)) == 1
    assert (info.gateway, info.gateway_chat_id, info.agent) == ("telegram", "42", "bot")


async def test_different_chats_and_gateways_get_different_sessions(tmp_path: Path) -> None:
    keys = [("telegram", "1"), ("telegram", "2"), ("discord", "1"), ("discord", "2")]
    async with harness(tmp_path) as h:
        ids = await asyncio.gather(
            *(h.runner.session_for_chat(gw, chat, "bot") for gw, chat in keys * 10)
        )
    by_key = dict(zip(keys * 10, ids, strict=True))
    assert len(set(by_key.values())) == 4
    assert all(by_key[key] == sid for key, sid in zip(keys * 10, ids, strict=True))
    assert len(session_folders(tmp_path)) == 4


async def test_a_chat_keeps_its_session_across_a_restart(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        first = await h.runner.session_for_chat("telegram", "42", "bot")
    async with harness(tmp_path) as h2:
        again = await h2.runner.session_for_chat("telegram", "42", "bot")
    assert again == first
