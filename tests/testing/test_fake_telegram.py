"""The fake Telegram Bot API, driven by the real python-telegram-bot client over localhost."""

from __future__ import annotations

import asyncio
import datetime as dtm
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import telegram
from telegram import InlineKeyboardButton, InlineKeyboardMarkup
from telegram.ext import ApplicationBuilder, ContextTypes, MessageHandler, filters

from duragent.config import load_workspace
from duragent.config.gateways import TelegramConfig
from duragent.testing.fake_telegram import DEFAULT_TOKEN, FakeTelegram
from duragent.testing.telegram_faults import FaultRule
from tests.polling import eventually

CHAT = 42


pytestmark = pytest.mark.usefixtures("timedelta_periods")


def keyboard(*pairs: tuple[str, str]) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup([[InlineKeyboardButton(t, callback_data=d) for t, d in pairs]])


# -- getMe and long polling ---------------------------------------------------------------------


async def test_get_me_answers_the_configured_bot(tg: FakeTelegram, bot: telegram.Bot) -> None:
    me = await bot.get_me()
    assert (me.username, me.is_bot, me.id) == ("duragent_test_bot", True, 123456)
    assert tg.calls("getMe")


async def test_a_long_poll_waiting_for_updates_receives_one_pushed_later(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    poll = asyncio.create_task(bot.get_updates(timeout=10))
    assert await eventually(lambda: tg.polls_waiting == 1)
    tg.push_message(CHAT, "hello there")
    updates = await asyncio.wait_for(poll, 120)
    assert [u.message.text for u in updates if u.message] == ["hello there"]
    message = updates[0].message
    assert message is not None
    assert message.chat.type == "private"
    assert message.from_user is not None
    assert message.from_user.id == CHAT


async def test_unconfirmed_updates_come_again_until_offset_confirms_them(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    tg.push_message(CHAT, "one")
    tg.push_message(CHAT, "two")
    first = await bot.get_updates()
    again = await bot.get_updates()
    assert [u.update_id for u in again] == [u.update_id for u in first]
    assert len(first) == 2
    assert await bot.get_updates(offset=first[-1].update_id + 1) == ()
    assert tg.pending_updates() == []


async def test_an_update_taken_by_a_poller_that_died_is_delivered_to_the_next_one(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    async with httpx.AsyncClient() as doomed:
        dying = asyncio.create_task(doomed.get(f"{tg.base_url}{tg.token}/getUpdates?timeout=10"))
        assert await eventually(lambda: tg.polls_waiting == 1)
        dying.cancel()
    tg.push_message(CHAT, "sent while the bot was down")
    updates = await bot.get_updates(timeout=5)
    assert [u.message.text for u in updates if u.message] == ["sent while the bot was down"]


async def test_limit_bounds_a_batch(tg: FakeTelegram, bot: telegram.Bot) -> None:
    for n in range(3):
        tg.push_message(CHAT, f"m{n}")
    batch = await bot.get_updates(limit=2)
    assert [u.message.text for u in batch if u.message] == ["m0", "m1"]


async def test_a_poll_with_nothing_to_deliver_answers_empty_at_its_timeout(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    assert await bot.get_updates(timeout=1) == ()
    assert tg.calls("getUpdates")[-1].params["timeout"] == 1


async def test_a_newer_poll_ends_an_older_one_with_conflict(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    older = asyncio.create_task(bot.get_updates(timeout=10))
    assert await eventually(lambda: tg.polls_waiting == 1)
    async with telegram.Bot(tg.token, base_url=tg.base_url) as second_instance:
        await second_instance.get_updates()
    with pytest.raises(telegram.error.Conflict, match="terminated by other getUpdates"):
        await asyncio.wait_for(older, 120)


# -- what users send ---------------------------------------------------------------------------


async def test_mentions_and_commands_get_entities_in_utf16_offsets(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    tg.push_message(-100, "😀 @duragent_test_bot /ask@duragent_test_bot now", chat_type="group")
    (update,) = await bot.get_updates()
    assert update.message is not None
    parsed = update.message.parse_entities()
    assert sorted(parsed.values()) == ["/ask@duragent_test_bot", "@duragent_test_bot"]
    assert update.message.chat.type == "group"


async def test_media_edits_replies_threads_and_channel_posts_parse_in_ptb(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    first = tg.push_message(-100, "question", chat_type="supergroup", message_thread_id=7)
    tg.push_message(-100, caption="look", photo=True, chat_type="supergroup")
    tg.push_message(CHAT, sticker="👍")
    tg.push_message(CHAT, document="notes.pdf", caption="the notes")
    tg.push_edited_message(-100, first["message"]["message_id"], "question, edited")
    tg.push_message(-100, "answer", reply_to_message_id=first["message"]["message_id"])
    tg.push_message(-200, "news", chat_type="channel")
    u = await bot.get_updates()
    assert u[0].message is not None
    assert u[0].message.message_thread_id == 7
    assert u[0].message.is_topic_message
    assert u[1].message is not None
    assert (u[1].message.caption, u[1].message.photo[-1].width) == ("look", 1280)
    assert u[2].message is not None
    assert u[2].message.sticker is not None
    assert u[2].message.sticker.emoji == "👍"
    assert u[3].message is not None
    assert u[3].message.document is not None
    assert u[3].message.document.file_name == "notes.pdf"
    assert u[4].edited_message is not None
    assert u[4].edited_message.text == "question, edited"
    assert u[5].message is not None
    assert u[5].message.reply_to_message is not None
    assert u[5].message.reply_to_message.message_id == first["message"]["message_id"]
    assert u[6].channel_post is not None
    assert u[6].channel_post.sender_chat is not None


def test_a_push_that_telegram_could_not_send_fails_in_the_test() -> None:
    fake = FakeTelegram()
    with pytest.raises(LookupError, match="no message 9"):
        fake.push_message(CHAT, "re", reply_to_message_id=9)
    with pytest.raises(ValueError, match="text or media"):
        fake.push_message(CHAT, "both", photo=True)


# -- what the bot sends ------------------------------------------------------------------------


async def test_send_message_returns_the_message_and_the_user_sees_its_text(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    tg.push_message(CHAT, "hi")
    sent = await bot.send_message(CHAT, "<b>Hello</b> &amp; welcome", parse_mode="HTML")
    later = await bot.send_message(CHAT, "again", reply_to_message_id=1)
    assert (sent.message_id, later.message_id) == (2, 3)  # one sequence with the user's "hi"
    assert sent.from_user is not None
    assert sent.from_user.is_bot
    assert sent.text == "Hello & welcome"
    assert sent.parse_entities() == {sent.entities[0]: "Hello"}
    assert later.reply_to_message is not None
    assert later.reply_to_message.text == "hi"
    assert tg.sent_messages(CHAT) == ["Hello & welcome", "again"]
    assert tg.calls("sendMessage")[0].params["parse_mode"] == "HTML"
    assert len(tg.send_times(CHAT)) == 2
    assert tg.most_sends_within(CHAT, 3600) == 2


async def test_messages_sends_and_edits_are_dated_by_the_given_clock() -> None:
    a_year_ahead = dtm.datetime(2027, 11, 24, 12, 0, tzinfo=dtm.UTC)
    async with FakeTelegram(clock=a_year_ahead.timestamp) as tg:
        update = tg.push_message(CHAT, "hi")
        async with telegram.Bot(tg.token, base_url=tg.base_url) as bot:
            sent = await bot.send_message(CHAT, "hello")
            edited = await bot.edit_message_text("hello again", chat_id=CHAT, message_id=2)
            (received,) = await bot.get_updates()
    assert update["message"]["date"] == int(a_year_ahead.timestamp())
    assert received.message is not None
    assert received.message.date == a_year_ahead
    assert sent.date == a_year_ahead
    assert isinstance(edited, telegram.Message)
    assert edited.edit_date == a_year_ahead


@pytest.mark.parametrize(
    "html",
    ["a < b", "line<br>break", "<b>left open", "<b><i>crossed</b></i>", "<span>x</span>", "</b>"],
)
async def test_malformed_html_is_refused_as_telegram_does(bot: telegram.Bot, html: str) -> None:
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)can't parse entities"):
        await bot.send_message(CHAT, html, parse_mode="HTML")


async def test_the_length_limit_counts_the_visible_text(bot: telegram.Bot) -> None:
    fits = await bot.send_message(CHAT, "<b>" + "x" * 4096 + "</b>", parse_mode="HTML")
    assert fits.text == "x" * 4096
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)message is too long"):
        await bot.send_message(CHAT, "x" * 4097)


async def test_text_that_shows_nothing_is_empty(bot: telegram.Bot) -> None:
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)message text is empty"):
        await bot.send_message(CHAT, "<b> </b>", parse_mode="HTML")


async def test_a_reply_to_a_missing_message_is_refused(bot: telegram.Bot) -> None:
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)replied not found"):
        await bot.send_message(CHAT, "re", reply_to_message_id=77)


async def test_edits_change_the_message_and_an_edit_that_changes_nothing_is_refused(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    sent = await bot.send_message(CHAT, "draft", reply_markup=keyboard(("Yes", "y")))
    edited = await bot.edit_message_text("final", chat_id=CHAT, message_id=sent.message_id)
    assert isinstance(edited, telegram.Message)
    kept = tg.message(CHAT, sent.message_id)
    assert kept is not None
    assert edited.edit_date is not None
    assert (kept["text"], kept["edit_date"]) == ("final", edited.edit_date.timestamp())
    assert edited.reply_markup is None  # an edit without a keyboard removes it
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)not modified"):
        await bot.edit_message_text("final", chat_id=CHAT, message_id=sent.message_id)
    marked = await bot.edit_message_reply_markup(
        chat_id=CHAT, message_id=sent.message_id, reply_markup=keyboard(("No", "n"))
    )
    assert isinstance(marked, telegram.Message)
    assert marked.reply_markup == keyboard(("No", "n"))
    assert tg.sent_messages(CHAT) == ["draft"]  # what was sent, as the call answered it


async def test_a_button_press_round_trip(tg: FakeTelegram, bot: telegram.Bot) -> None:
    sent = await bot.send_message(
        CHAT, "Approve?", reply_markup=keyboard(("Yes", "y"), ("No", "n"))
    )
    tg.push_callback_query(CHAT, sent.message_id, button="No")
    (update,) = await bot.get_updates()
    query = update.callback_query
    assert query is not None
    assert (query.data, query.from_user.id) == ("n", CHAT)
    assert isinstance(query.message, telegram.Message)
    assert query.message.message_id == sent.message_id
    assert await query.answer("Denied")
    assert tg.calls("answerCallbackQuery")[0].params["text"] == "Denied"
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)query is too old"):
        await query.answer("twice")
    with pytest.raises(LookupError, match="no button"):
        tg.push_callback_query(CHAT, sent.message_id, "maybe")


async def test_a_stale_press_of_a_button_edited_away_is_still_delivered(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    sent = await bot.send_message(CHAT, "Approve?", reply_markup=keyboard(("Yes", "y")))
    await bot.edit_message_text("Approved", chat_id=CHAT, message_id=sent.message_id)
    with pytest.raises(LookupError, match="no button"):
        tg.push_callback_query(CHAT, sent.message_id, "y")
    tg.push_callback_query(CHAT, sent.message_id, "y", stale=True)  # a double tap
    (update,) = await bot.get_updates()
    query = update.callback_query
    assert query is not None
    assert query.data == "y"
    assert await query.answer("No pending approval")


async def test_chat_actions_webhooks_and_commands_are_answered(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    assert await bot.send_chat_action(CHAT, "typing")
    assert await bot.set_my_commands([("ask", "Ask something")])
    assert await bot.delete_webhook()
    assert (await bot.get_webhook_info()).url == ""
    assert [c.params["action"] for c in tg.calls("sendChatAction")] == ["typing"]


async def test_an_unknown_method_is_not_found_and_recorded(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    with pytest.raises(telegram.error.EndPointNotFound):
        await bot.do_api_request("getTeapot", api_kwargs={"chat_id": CHAT})
    assert tg.calls("getTeapot")[0].status == 404


async def test_a_wrong_token_is_unauthorized(tg: FakeTelegram) -> None:
    with pytest.raises(telegram.error.InvalidToken):
        async with telegram.Bot("999:WRONG", base_url=tg.base_url):
            pass
    assert tg.calls("getMe")[0].status == 401


# -- faults ----------------------------------------------------------------------------------


async def test_every_second_send_is_flood_limited_with_its_retry_after(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    tg.add_fault(FaultRule.too_many_requests(retry_after=7, every=2))
    await bot.send_message(CHAT, "one")
    with pytest.raises(telegram.error.RetryAfter) as limited:
        await bot.send_message(CHAT, "two")
    assert limited.value.retry_after == dtm.timedelta(seconds=7)
    assert tg.sent_messages(CHAT) == ["one"]
    assert tg.faults[0].fired == 1


async def test_a_send_into_a_limited_chat_before_its_retry_after_is_reported(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    tg.add_fault(FaultRule.too_many_requests(retry_after=30, times=1, chat_id=CHAT))
    with pytest.raises(telegram.error.RetryAfter):
        await bot.send_message(CHAT, "first")
    await bot.send_message(CHAT + 1, "another chat is not limited")
    await bot.send_message(CHAT, "too soon")
    (early,) = tg.early_retries()
    assert early.early.params["text"] == "too soon"
    assert early.too_early_by > 0


async def test_forced_parse_errors_and_server_errors_surface_in_ptb(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    tg.add_fault(FaultRule.cant_parse_entities(times=1), FaultRule.server_failure(502, times=1))
    with pytest.raises(telegram.error.BadRequest, match=r"(?i)can't parse entities"):
        await bot.send_message(CHAT, "plain and valid")
    with pytest.raises(telegram.error.NetworkError, match="Bad Gateway"):
        await bot.send_message(CHAT, "plain and valid")
    await bot.send_message(CHAT, "plain and valid")
    assert [c.fault for c in tg.calls("sendMessage")] == ["bad_entities", "server_error", None]


async def test_a_dropped_connection_loses_the_answer_but_not_always_the_message(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    tg.add_fault(FaultRule.dropped(times=1), FaultRule.dropped(after_applying=True, times=1))
    for text in ("never sent", "sent, answer lost"):
        with pytest.raises(telegram.error.NetworkError):
            await bot.send_message(CHAT, text)
    assert tg.sent_messages(CHAT) == ["sent, answer lost"]
    assert [c.status for c in tg.calls("sendMessage")] == [0, 0]


async def test_a_slow_answer_times_the_client_out_yet_the_message_goes_out(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    tg.add_fault(FaultRule.slow(0.3, times=1))
    with pytest.raises(telegram.error.TimedOut):
        await bot.send_message(CHAT, "slow", read_timeout=0.05)
    assert await eventually(lambda: tg.sent_messages(CHAT) == ["slow"])


def test_a_fault_rule_names_its_mistake() -> None:
    with pytest.raises(ValueError, match="unknown fault rule field"):
        FaultRule.from_json({"kind": "retry_after", "evry": 2})
    with pytest.raises(ValueError, match="fault kind must be one of"):
        FaultRule.from_json({"kind": "explode"})


# -- python-telegram-bot's Application -----------------------------------------------------


async def test_a_ptb_application_polls_and_answers(tg: FakeTelegram) -> None:
    async def echo(update: telegram.Update, _context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.message is not None
        await update.message.reply_text(f"echo: {update.message.text}")

    app = ApplicationBuilder().token(tg.token).base_url(tg.base_url).build()
    app.add_handler(MessageHandler(filters.TEXT, echo))
    async with app:
        assert app.updater is not None
        await app.updater.start_polling(poll_interval=0, timeout=5)
        await app.start()
        tg.push_message(CHAT, "ping")
        assert await eventually(lambda: tg.sent_messages(CHAT) == ["echo: ping"])
        await app.updater.stop()
        await app.stop()


# -- the control API, the thread and the CLI ----------------------------------------------------


async def test_another_process_can_push_script_and_read_over_http(
    tg: FakeTelegram, bot: telegram.Bot
) -> None:
    async with httpx.AsyncClient(base_url=tg.url) as http:
        pushed = await http.post("/_fake/message", json={"chat_id": CHAT, "text": "hi"})
        assert pushed.json()["message"]["text"] == "hi"
        rule = {"kind": "retry_after", "retry_after": 4, "times": 1}
        assert (await http.post("/_fake/faults", json=rule)).json()[0]["kind"] == "retry_after"
        (update,) = await bot.get_updates()
        with pytest.raises(telegram.error.RetryAfter):
            await bot.send_message(CHAT, "limited")
        await bot.send_message(CHAT, "through")
        calls = (await http.get("/_fake/calls", params={"method": "sendMessage"})).json()
        assert [c["status"] for c in calls] == [429, 200]
        assert (await http.get("/_fake/sent", params={"chat_id": CHAT})).json() == {
            "texts": ["through"]
        }
        assert len((await http.get("/_fake/early_retries")).json()) == 1
        times = (await http.get("/_fake/send_times", params={"chat_id": CHAT})).json()["times"]
        assert times == tg.send_times(CHAT)
        assert (await http.get("/_fake/updates")).json()["pending"][0]["update_id"] == (
            update.update_id
        )
        bad = await http.post("/_fake/message", json={"chat": CHAT, "text": "hi"})
        assert bad.status_code == 400
        assert "chat_id" in bad.json()["error"]
        assert (await http.delete("/_fake/faults")).json() == []


def test_the_fake_runs_in_a_thread_for_sync_tests() -> None:
    with FakeTelegram(token="1:T") as tg:
        tg.push_message(CHAT, "from the test thread")
        answer = httpx.get(f"{tg.base_url}1:T/getUpdates").json()
        assert answer["ok"] is True
        assert answer["result"][0]["message"]["text"] == "from the test thread"
        form = httpx.post(f"{tg.base_url}1:T/sendMessage", data={"chat_id": CHAT, "text": "42"})
        assert form.json()["result"]["text"] == "42"  # a form's text stays a string


def test_the_cli_serves_the_fake_in_its_own_process() -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "duragent.testing.fake_telegram", "--port", "0", "--token", "9:X"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        url = child.stdout.readline().split()[-1]
        assert httpx.post(f"{url}/_fake/message", json={"chat_id": 1, "text": "hi"}).is_success
        info = httpx.get(f"{url}/_fake/info").json()
        assert (info["token"], info["pending_updates"]) == ("9:X", 1)
        me = json.loads(httpx.get(f"{url}/bot9:X/getMe").text)
        assert me["result"]["is_bot"] is True
    finally:
        child.terminate()
        status = child.wait(120)
        if child.stdout is not None:
            child.stdout.close()
    assert status == 0


def test_the_default_token_passes_duragents_own_token_check() -> None:
    assert TelegramConfig(bot_token=DEFAULT_TOKEN).token_problem() is None


def test_the_cli_without_a_token_prints_a_gateway_config_duragent_accepts(
    tmp_path: Path,
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "duragent.testing.fake_telegram", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        url = child.stdout.readline().split()[-1]
        lines = iter(child.stdout.readline, "")
        printed = next(line for line in lines if line.startswith("duragent.yaml: "))
        (tmp_path / "duragent.yaml").write_text(printed.removeprefix("duragent.yaml: "))
        telegram = load_workspace(tmp_path).config.gateways.telegram
        assert telegram is not None
        assert telegram.token_problem() is None
        assert telegram.base_url == url
        assert httpx.get(f"{url}/bot{telegram.bot_token}/getMe").json()["ok"] is True
    finally:
        child.terminate()
        child.wait(120)
        if child.stdout is not None:
            child.stdout.close()
