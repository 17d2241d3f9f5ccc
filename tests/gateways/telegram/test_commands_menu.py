"""The command menu, ``/start`` and ``/help``, and files in groups, through the fake Bot API.

A real runtime against ``FakeTelegram``: the menus are read per scope as Telegram keeps them
(``tg.commands(scope)``), the answers from what the bot sent, the downloads from the fake's
file server (spec ``202612051900.start-help-menu``).
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from duragent.config import load_workspace
from duragent.runtime import Runtime
from duragent.testing import FakeTelegram, Reply, ScriptedLLMServer
from duragent.testing.telegram_faults import FaultRule
from tests.frontkit.media_kit import png
from tests.gateways.telegram.rig import BOT, TOKEN, Rig, echo_reply, telegram_rig, write_workspace
from tests.polling import eventually

OWNER = 77
MEMBER = 88
STRANGER = 99
GROUP = -1001
PAIRING = {"owners": {"telegram": [OWNER]}, "dm": {"policy": "pairing", "allowlist": [MEMBER]}}
PRIVATE = {"type": "all_private_chats"}
GROUPS = {"type": "all_group_chats"}
OWNERS_DM = {"type": "chat", "chat_id": OWNER}
MEMBERS = ["start", "help", "reset", "status", "pin", "unpin"]
PHOTO = png(64, 48)


def names(menu: list[dict[str, str]]) -> list[str]:
    return [c["command"] for c in menu]


def edit_agent(rig: Rig, change: dict[str, Any]) -> None:
    """Merge ``change`` into the agent's ``spec`` (then ``reload-agents`` takes it)."""
    path = rig.root / ".duragent" / "agents" / "bot" / "agent.yaml"
    document = json.loads(path.read_text())
    document["spec"].update(change)
    path.write_text(json.dumps(document))


async def test_the_menu_is_set_at_start_for_private_chats_groups_and_the_owner(
    tmp_path: Path,
) -> None:
    async with telegram_rig(tmp_path, access=PAIRING) as rig:
        tg = rig.tg
        assert await eventually(lambda: len(tg.command_menus()) == 4), tg.command_menus()
        assert names(tg.commands()) == MEMBERS  # where a client knows no narrower menu
        assert names(tg.commands(PRIVATE)) == MEMBERS
        assert names(tg.commands(GROUPS)) == MEMBERS[1:]  # /start is not offered in groups
        assert names(tg.commands(OWNERS_DM)) == [*MEMBERS, "pair"]
        assert tg.commands({"type": "all_chat_administrators"}) == []
        for menu in tg.command_menus().values():
            for command in menu:
                assert re.fullmatch(r"[a-z0-9_]{1,32}", command["command"])
                assert 0 < len(command["description"]) <= 256
        assert all(c.status == 200 for c in tg.calls("setMyCommands"))


async def test_the_menu_follows_a_reload_of_the_agents(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path, access=PAIRING) as rig:
        tg = rig.tg
        assert await eventually(lambda: len(tg.command_menus()) == 4)
        edit_agent(
            rig,
            {
                "access": {"dm": {"policy": "open"}},  # no owner, no pairing: no owner's menu
                "chat": {"commands": [{"command": "order", "description": "Look up an order"}]},
            },
        )
        await rig.runtime.reload()
        assert await eventually(lambda: names(tg.commands(PRIVATE)) == [*MEMBERS, "order"])
        assert await eventually(lambda: tg.commands(OWNERS_DM) == [])
        assert names(tg.commands()) == [*MEMBERS, "order"]
        assert names(tg.commands(GROUPS)) == [*MEMBERS[1:], "order"]
        assert tg.commands(PRIVATE)[-1] == {"command": "order", "description": "Look up an order"}


async def test_a_menu_telegram_refuses_is_logged_and_the_bot_still_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="duragent.gateways.telegram")
    async with (
        FakeTelegram(token=TOKEN, bot_username=BOT) as tg,
        ScriptedLLMServer(responder=echo_reply) as llm,
    ):
        tg.add_fault(FaultRule.server_failure(500, method="setMyCommands"))
        tg.add_fault(FaultRule.server_failure(500, method="deleteMyCommands"))
        section = {"bot_token": TOKEN, "base_url": tg.url, "poll_timeout_seconds": 1}
        write_workspace(tmp_path, llm_url=llm.openai_base_url, telegram=section)
        runtime = Runtime(load_workspace(tmp_path), port=0)
        await runtime.start()
        try:
            assert await eventually(lambda: len(tg.calls("setMyCommands")) >= 3)
            tg.push_message(42, "still there?")
            assert await eventually(lambda: tg.sent_messages(42) == ["re: still there?"])
            assert runtime.gateway_states()["telegram"] == "running"
        finally:
            await runtime.aclose()
    assert tg.command_menus() == {}
    refused = [r.getMessage() for r in caplog.records if "command menu" in r.getMessage()]
    assert refused, "the refusal was not logged"
    assert "could not set the command menu for default" in refused[0]


async def test_start_and_help_through_telegram_for_an_owner_a_member_and_a_stranger(
    tmp_path: Path,
) -> None:
    async with telegram_rig(tmp_path, access=PAIRING) as rig:
        tg = rig.tg
        tg.push_message(OWNER, "/help")
        tg.push_message(MEMBER, "/help")
        tg.push_message(MEMBER, "/start")
        tg.push_message(STRANGER, "/start")
        owners = (await rig.replies(OWNER))[0]
        members = await rig.replies(MEMBER, 2)
        strangers = (await rig.replies(STRANGER))[0]
        await rig.settle()
        assert rig.llm.requests == []
    assert "/pair [code] — " in owners
    assert "/reset — " in members[0]
    assert "/pair" not in members[0]
    assert members[1].startswith("Hi! I am bot.\nWrite to me here and I will answer.")
    assert strangers.startswith("Hi! I am bot.\n\nI only answer people my owner has approved.")
    assert "Your pairing code is " in strangers


async def test_a_group_photo_not_addressed_to_the_bot_is_neither_answered_nor_downloaded(
    tmp_path: Path,
) -> None:
    async with telegram_rig(tmp_path) as rig:
        plain = rig.tg.push_photo(GROUP, PHOTO)
        captioned = rig.tg.push_photo(GROUP, PHOTO, caption="from the trip")
        await rig.settle()
        assert rig.tg.sent_messages(GROUP) == []
        assert rig.llm.requests == []
        for update in (plain, captioned):
            assert rig.tg.downloads(update["message"]["photo"][-1]["file_id"]) == 0

        rig.llm.enqueue(Reply(text="A red square."))
        addressed = rig.tg.push_photo(GROUP, PHOTO, caption=f"@{BOT} and this one?")
        assert await rig.replies(GROUP) == ["A red square."]
        await rig.settle()
        assert rig.tg.downloads(addressed["message"]["photo"][-1]["file_id"]) == 1
        asked = str(rig.llm.requests[-1].json["messages"])
        assert "[photo, not downloaded] from the trip" in asked  # kept as context, named


async def test_a_captionless_group_photo_replying_to_the_bot_is_answered(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        rig.tg.push_message(GROUP, f"@{BOT} hello")
        await rig.replies(GROUP)
        answer = rig.tg.calls("sendMessage", chat_id=GROUP)[-1].answer
        assert answer is not None
        rig.llm.enqueue(Reply(text="Seen."))
        update = rig.tg.push_photo(GROUP, PHOTO, reply_to_message_id=answer["result"]["message_id"])
        assert await rig.replies(GROUP, 2)
        await rig.settle()
        assert rig.tg.sent_messages(GROUP)[-1] == "Seen."
        assert rig.tg.downloads(update["message"]["photo"][-1]["file_id"]) == 1
