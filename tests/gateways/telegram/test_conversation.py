"""A Telegram conversation end to end: DMs, groups with mention gating, slash commands.

A real runtime serves the Telegram front end against the fake Bot API server; users act by
pushing updates, the tests read what Telegram was asked to show and what the model was asked.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from duragent.store import SessionStore, StoreHealth
from duragent.testing import Reply
from tests.context.quoted_wire import spoken
from tests.gateways.telegram.rig import BOT, assert_never_logged, log_everything, telegram_rig
from tests.polling import eventually
from tests.store.failing_ops import FailingFileOps

GROUP = -100555


def user_messages(request_json: dict[str, Any]) -> list[str]:
    """What people said in the request (the runtime's quoted context blocks left out)."""
    return spoken(request_json["messages"])


async def test_a_direct_message_gets_one_reply_with_typing_and_few_calls(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log_everything(caplog)
    async with telegram_rig(tmp_path) as rig:
        rig.llm.enqueue(Reply(text="Hello Ann."))
        rig.tg.push_message(42, "hello", first_name="Ann")
        assert await rig.replies(42) == ["Hello Ann."]
        await rig.settle()
        calls = rig.message_calls()
        assert rig.tg.sent_messages(42) == ["Hello Ann."]
        methods = [c.method for c in calls]
        assert "sendChatAction" in methods, "no typing shown"
        assert methods.index("sendChatAction") < methods.index("sendMessage")
        assert len(calls) <= 3, [c.method for c in calls]
        sent = rig.tg.calls("sendMessage")[0]
        assert "reply_parameters" not in sent.params  # a DM is its own thread: no quote
    assert user_messages(rig.llm.requests[-1].json) == ["hello"]
    assert any("/bot<redacted>/sendMessage" in r.getMessage() for r in caplog.records)
    assert_never_logged(caplog)


async def test_messages_dated_a_year_ago_or_a_year_ahead_are_answered_like_any_other(
    tmp_path: Path,
) -> None:
    """No update is judged by its date (``bench/year`` dates them by a simulated clock)."""
    now = int(time.time())
    async with telegram_rig(tmp_path) as rig:
        rig.llm.enqueue(Reply(text="old one"), Reply(text="new one"))
        for n, (date, text) in enumerate(((now - 366 * 86400, "a"), (now + 366 * 86400, "b"))):
            message = {
                "message_id": 10 + n,
                "date": date,
                "chat": {"id": 42, "type": "private", "first_name": "Ann"},
                "from": {"id": 42, "is_bot": False, "first_name": "Ann"},
                "text": text,
            }
            rig.tg.push_update("message", message)
            assert await rig.replies(42, count=n + 1)
    assert rig.tg.sent_messages(42) == ["old one", "new one"]


async def test_a_group_hears_chatter_silently_then_answers_a_mention_with_the_chatter(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log_everything(caplog)
    async with telegram_rig(tmp_path, access={"groups": {"policy": "open"}}) as rig:
        rig.llm.enqueue(Reply(text="It broke at 9."))
        rig.tg.push_message(GROUP, "the build is red", user_id=7, first_name="Ann")
        rig.tg.push_message(GROUP, "since 9", user_id=8, first_name="Bob")
        await rig.settle()
        assert rig.tg.sent_messages(GROUP) == []
        assert rig.llm.requests == []
        asked = rig.tg.push_message(GROUP, f"@{BOT} what happened?", user_id=9, first_name="Eve")
        assert await rig.replies(GROUP) == ["It broke at 9."]
        await rig.settle()
    prompt = rig.llm.requests[-1].json["messages"]
    assert prompt[-2]["role"] == "user"  # quoted right before the mention (issue 33)
    assert prompt[-2]["content"].endswith(
        "> Recent group conversation before you were mentioned:\n>\n"
        "> Ann: the build is red\n> Bob: since 9"
    )
    assert "the build is red" not in prompt[0]["content"]
    assert user_messages(rig.llm.requests[-1].json) == [f"Eve: @{BOT} what happened?"]
    reply = rig.tg.calls("sendMessage", chat_id=GROUP)[0]
    assert reply.params["reply_parameters"]["message_id"] == asked["message"]["message_id"]
    assert_never_logged(caplog)


async def test_an_unaddressed_group_message_is_not_answered(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path, access={"groups": {"policy": "open"}}) as rig:
        rig.tg.push_message(GROUP, "anyone around?", user_id=7, first_name="Ann")
        await rig.settle()
        assert rig.tg.sent_messages(GROUP) == []
        assert rig.message_calls(GROUP) == []
        assert rig.llm.requests == []


async def test_status_and_reset_addressed_to_this_bot_are_commands(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        rig.llm.enqueue(Reply(text="first"))
        rig.tg.push_message(42, "hello")
        await rig.replies(42, 1)
        rig.tg.push_message(42, "/status")
        rig.tg.push_message(42, f"/reset@{BOT}")
        rig.tg.push_message(42, "/reset@other_bot")
        texts = await rig.replies(42, 4)
        await rig.settle()
    assert texts[0] == "first"
    assert texts[1].startswith("Session: ")
    assert "\nAgent: bot\nStatus: Active\n" in texts[1]
    assert texts[2] == "Session reset. Send a message to start a new conversation."
    assert texts[3] == "re: /reset@other_bot"  # another bot's command is just a message
    assert user_messages(rig.llm.requests[-1].json) == ["/reset@other_bot"]


async def test_an_update_delivered_twice_is_answered_once(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        first = rig.tg.push_message(42, "only once please")
        await rig.delivered(first)
        rig.tg.push_update("message", first["message"])  # Telegram sends it again
        await rig.settle()
        assert rig.tg.sent_messages(42) == ["re: only once please"]
    assert len(rig.llm.requests) == 1


async def test_a_message_recorded_before_a_restart_is_answered_after_it(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        rig.llm.enqueue(Reply(text="never seen", delay=30))  # the model hangs; we redeploy
        update = rig.tg.push_message(42, "are you there?")
        await rig.delivered(update)  # recorded, and confirmed to Telegram
        assert await eventually(lambda: len(rig.llm.requests) == 1)
        await rig.restart()
        assert await rig.replies(42) == ["re: are you there?"]
        await rig.settle()
        assert rig.tg.sent_messages(42) == ["re: are you there?"]
    assert user_messages(rig.llm.requests[-1].json) == ["are you there?"]


async def test_a_message_that_could_not_be_recorded_is_asked_for_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A full disk: the update is not confirmed, Telegram sends it again, and it is answered."""
    async with telegram_rig(tmp_path) as rig:
        store = rig.runtime.registry.store
        assert isinstance(store, SessionStore)
        disk = FailingFileOps()
        store.ops, store.health = disk, StoreHealth(store.root, disk)
        disk.failing = True
        rig.tg.push_message(42, "written while the disk is full")

        def refused() -> bool:
            return any("could not be handled" in r.getMessage() for r in caplog.records)

        assert await eventually(refused), "the update was never handled"
        disk.failing = False  # space freed
        assert await rig.replies(42) == ["re: written while the disk is full"]
        await rig.settle()
        assert rig.tg.sent_messages(42) == ["re: written while the disk is full"]


async def test_an_edited_message_is_not_a_new_turn(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        first = rig.tg.push_message(42, "hello")
        await rig.replies(42)
        rig.tg.push_edited_message(42, first["message"]["message_id"], "hello, edited")
        rig.tg.push_message(42, "next")
        await rig.replies(42, 2)
        await rig.settle()
        assert rig.tg.sent_messages(42) == ["re: hello", "re: next"]
    assert [user_messages(r.json)[-1] for r in rig.llm.requests] == ["hello", "next"]
