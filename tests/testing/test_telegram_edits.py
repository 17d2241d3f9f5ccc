"""A reply streamed into a chat through the fake Telegram: edits, drafts and deletions.

The real python-telegram-bot client edits a preview message, shows drafts in a private chat
and deletes; the fake records each accepted change in order, keeps the message as it now
reads, and refuses what Telegram refuses (an edit that changes nothing, a 429 on edits).
"""

from __future__ import annotations

import datetime as dtm

import httpx
import pytest
import telegram

from duragent.testing.fake_telegram import FakeTelegram
from duragent.testing.telegram_faults import FaultRule

CHAT = 42
GROUP = -100

pytestmark = pytest.mark.usefixtures("timedelta_periods")


async def test_each_edit_is_recorded_in_order_and_the_message_reads_as_the_last_one(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    preview = await bot.send_message(CHAT, "Hel")
    other = await bot.send_message(CHAT, "another reply")
    mid = preview.message_id
    await bot.edit_message_text("Hello, wor", chat_id=CHAT, message_id=mid)
    await bot.edit_message_text(
        "<b>Hello</b>, world!", chat_id=CHAT, message_id=mid, parse_mode="HTML"
    )
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)message is not modified"):
        await bot.edit_message_text(
            "<b>Hello</b>, world!", chat_id=CHAT, message_id=mid, parse_mode="HTML"
        )
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)message to edit not found"):
        await bot.edit_message_text("lost", chat_id=CHAT, message_id=999)
    edits = tg.edits(CHAT, mid)
    assert [(e.text, e.parse_mode) for e in edits] == [
        ("Hello, wor", None),
        ("Hello, world!", "HTML"),
    ]
    assert edits[1].entities == [{"type": "bold", "offset": 0, "length": 5}]
    assert edits[0].time <= edits[1].time
    assert tg.edits(CHAT, other.message_id) == []
    assert tg.message_text(CHAT, mid) == "Hello, world!"
    assert tg.final_texts(CHAT) == ["Hello, world!", "another reply"]
    assert tg.sent_messages(CHAT) == ["Hel", "another reply"]  # as first sent
    assert tg.message_text(CHAT, 999) is None


async def test_a_429_on_an_edit_surfaces_as_retry_after_and_leaves_the_message_as_it_was(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    preview = await bot.send_message(CHAT, "Thinking")
    tg.add_fault(FaultRule.too_many_requests(retry_after=9, method="editMessageText", times=1))
    with pytest.raises(telegram.error.RetryAfter) as limited:
        await bot.edit_message_text("Thinking more", chat_id=CHAT, message_id=preview.message_id)
    assert limited.value.retry_after == dtm.timedelta(seconds=9)
    assert tg.edits(CHAT) == []
    assert tg.message_text(CHAT, preview.message_id) == "Thinking"
    await bot.edit_message_text("Done", chat_id=CHAT, message_id=preview.message_id)
    (early,) = tg.early_retries()
    assert (early.limited.method, early.early.method) == ("editMessageText", "editMessageText")
    assert [c.status for c in tg.calls("editMessageText")] == [429, 200]


async def test_server_errors_and_dropped_connections_hit_edits_too(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    preview = await bot.send_message(CHAT, "one")
    mid = preview.message_id
    tg.add_fault(
        FaultRule.server_failure(502, method="editMessageText", times=1),
        FaultRule.dropped(method="editMessageText", times=1),
        FaultRule.dropped(after_applying=True, method="editMessageText", times=1),
    )
    with pytest.raises(telegram.error.NetworkError, match="Bad Gateway"):
        await bot.edit_message_text("two", chat_id=CHAT, message_id=mid)
    with pytest.raises(telegram.error.NetworkError):
        await bot.edit_message_text("three", chat_id=CHAT, message_id=mid)
    with pytest.raises(telegram.error.NetworkError):
        await bot.edit_message_text("four", chat_id=CHAT, message_id=mid)
    assert [e.text for e in tg.edits(CHAT)] == ["four"]  # applied, answer lost
    assert tg.message_text(CHAT, mid) == "four"


async def test_drafts_are_recorded_in_private_chats_and_refused_elsewhere(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    assert await bot.send_message_draft(CHAT, draft_id=7)  # the "Thinking…" placeholder
    assert await bot.send_message_draft(CHAT, draft_id=7, text="The ans")
    assert await bot.send_message_draft(CHAT, 7, "The <i>answer</i>", parse_mode="HTML")
    await bot.send_message(CHAT, "The answer is 42.")
    drafts = tg.drafts(CHAT, 7)
    assert [(d.text, d.parse_mode) for d in drafts] == [
        ("", None),
        ("The ans", None),
        ("The answer", "HTML"),
    ]
    assert drafts[2].entities == [{"type": "italic", "offset": 4, "length": 6}]
    assert tg.sent_messages(CHAT) == ["The answer is 42."]  # a draft is not a message
    tg.push_message(GROUP, "hi", chat_type="group")
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)TEXTDRAFT_PEER_INVALID"):
        await bot.send_message_draft(GROUP, draft_id=1, text="x")
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)draft_id must be non-zero"):
        await bot.send_message_draft(CHAT, draft_id=0, text="x")
    tg.add_fault(FaultRule.too_many_requests(3, method="sendMessageDraft", times=1))
    with pytest.raises(telegram.error.RetryAfter):
        await bot.send_message_draft(CHAT, draft_id=8, text="limited")
    assert tg.drafts(CHAT, 8) == []


async def test_a_draft_through_the_raw_bot_api_method_is_taken(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    async with httpx.AsyncClient(base_url=f"{tg.base_url}{tg.token}") as http:
        answer = await http.post(
            "/sendMessageDraft", json={"chat_id": CHAT, "draft_id": 3, "text": "x"}
        )
    assert answer.json() == {"ok": True, "result": True}
    assert [(d.draft_id, d.text) for d in tg.drafts()] == [(3, "x")]


async def test_a_deleted_preview_is_gone_from_the_chat_and_recorded(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    preview = await bot.send_message(CHAT, "half a rep")
    await bot.send_message(CHAT, "the whole reply")
    assert await bot.delete_message(CHAT, preview.message_id)
    assert tg.final_texts(CHAT) == ["the whole reply"]
    assert [(d.message_id, d.text) for d in tg.deleted(CHAT)] == [
        (preview.message_id, "half a rep")
    ]
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)message to delete not found"):
        await bot.delete_message(CHAT, preview.message_id)
    user = tg.push_message(GROUP, "a member's words")
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)message can't be deleted"):
        await bot.delete_message(GROUP, user["message"]["message_id"])


async def test_another_process_reads_edits_drafts_and_messages_over_http(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    preview = await bot.send_message(CHAT, "a")
    await bot.edit_message_text("ab", chat_id=CHAT, message_id=preview.message_id)
    await bot.send_message_draft(CHAT, draft_id=5, text="d")
    done = await bot.send_message(CHAT, "c")
    await bot.delete_message(CHAT, done.message_id)
    async with httpx.AsyncClient(base_url=tg.url) as http:
        edits = (await http.get("/_fake/edits", params={"chat_id": CHAT})).json()
        assert [(e["message_id"], e["text"]) for e in edits] == [(preview.message_id, "ab")]
        drafts = (await http.get("/_fake/drafts", params={"draft_id": 5})).json()
        assert [(d["chat_id"], d["text"]) for d in drafts] == [(CHAT, "d")]
        deleted = (await http.get("/_fake/deleted", params={"chat_id": CHAT})).json()
        assert [d["text"] for d in deleted] == ["c"]
        texts = (await http.get("/_fake/final_texts", params={"chat_id": CHAT})).json()
        assert texts == {"chat_id": CHAT, "texts": ["ab"]}
        now = await http.get(
            "/_fake/message_now", params={"chat_id": CHAT, "message_id": preview.message_id}
        )
        assert now.json()["text"] == "ab"
        assert now.json()["message"]["edit_date"]
        missing = await http.get("/_fake/message_now", params={"chat_id": CHAT, "message_id": 99})
        assert missing.status_code == 404
        bad = await http.get("/_fake/edits", params={"message_id": "x"})
        assert bad.status_code == 400
