"""The command menu through the fake Telegram, set and read by the real python-telegram-bot.

Telegram keeps one menu per scope and language and a client shows the most specific; the fake
keeps them apart so a test sees which menu the bot set where.
"""

from __future__ import annotations

import httpx
import pytest
import telegram
from telegram import BotCommand, BotCommandScopeAllPrivateChats, BotCommandScopeChat

from duragent.testing.fake_telegram import FakeTelegram
from duragent.testing.telegram_faults import FaultRule

CHAT = 42

pytestmark = pytest.mark.usefixtures("timedelta_periods")


async def test_each_scope_and_language_has_a_menu_of_its_own(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    assert await bot.set_my_commands([("start", "Start"), ("help", "What I can do")])
    assert await bot.set_my_commands(
        [("reset", "Forget this chat")], scope=BotCommandScopeChat(CHAT)
    )
    assert await bot.set_my_commands([("hilfe", "Hilfe")], language_code="de")
    assert [c.command for c in await bot.get_my_commands()] == ["start", "help"]
    mine = await bot.get_my_commands(scope=BotCommandScopeChat(CHAT))
    assert mine == (BotCommand("reset", "Forget this chat"),)
    assert await bot.get_my_commands(scope=BotCommandScopeAllPrivateChats()) == ()
    assert tg.commands() == [
        {"command": "start", "description": "Start"},
        {"command": "help", "description": "What I can do"},
    ]
    assert tg.commands({"type": "chat", "chat_id": CHAT}) == [
        {"command": "reset", "description": "Forget this chat"}
    ]
    assert [c["command"] for c in tg.commands(language_code="de")] == ["hilfe"]
    assert len(tg.command_menus()) == 3
    assert await bot.delete_my_commands(scope=BotCommandScopeChat(CHAT))
    assert tg.commands({"type": "chat", "chat_id": CHAT}) == []
    assert [c.command for c in await bot.get_my_commands()] == ["start", "help"]
    assert [c.status for c in tg.calls("setMyCommands")] == [200, 200, 200]


async def test_a_command_telegram_refuses_is_refused(tg: FakeTelegram, bot: telegram.Bot) -> None:
    for bad in ("Help", "/help", "a" * 33, "hé"):
        with pytest.raises(telegram.error.BadRequest, match=r"(?i)BOT_COMMAND_INVALID"):
            await bot.set_my_commands([(bad, "x")])
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)description must be non-empty"):
        await bot.set_my_commands([("help", " ")])
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)LANG_CODE_INVALID"):
        await bot.set_my_commands([("help", "Help")], language_code="english")
    tg.add_fault(FaultRule.too_many_requests(2, method="setMyCommands", times=1))
    with pytest.raises(telegram.error.RetryAfter):
        await bot.set_my_commands([("help", "Help")])
    assert tg.command_menus() == {}


async def test_a_missing_scope_field_is_refused_and_no_commands_is_an_empty_menu(
    tg: FakeTelegram,
) -> None:
    async with httpx.AsyncClient(base_url=f"{tg.base_url}{tg.token}") as http:
        bad = await http.post("/setMyCommands", json={"commands": [], "scope": {"type": "chat"}})
        assert "chat_id" in bad.json()["description"]
        empty = await http.post("/setMyCommands", json={})
        assert empty.json() == {"ok": True, "result": True}
    assert tg.command_menus() == {'{"type":"default"} ': []}


async def test_another_process_reads_the_menus_over_http(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    await bot.set_my_commands([("help", "Help")], scope=BotCommandScopeChat(CHAT))
    async with httpx.AsyncClient(base_url=tg.url) as http:
        scope = '{"type": "chat", "chat_id": 42}'
        found = (await http.get("/_fake/commands", params={"scope": scope})).json()
        assert found["commands"] == [{"command": "help", "description": "Help"}]
        assert list(found["menus"]) == ['{"chat_id":42,"type":"chat"} ']
        assert (await http.get("/_fake/commands")).json()["commands"] == []
        bad = await http.get("/_fake/commands", params={"scope": "[1]"})
        assert bad.status_code == 400
