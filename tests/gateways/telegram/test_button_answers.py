"""Answering a button press: cosmetic (the toast), so Telegram refusing it must not fail the press.

Found by ``bench/year``: after a restart a press of a prompt that was asked again is
"no longer waiting"; answering its callback query a second time (the killed process had
answered it) gets Telegram's "query is too old", and the exception failed the whole update:
retried six times, then skipped with the updates queued behind it in that chat (user messages
among them: lost), and the approval asked again was never decided.
"""

from __future__ import annotations

from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup

from duragent.gateways.telegram.outbound import TelegramOutbound
from duragent.testing import FakeTelegram
from tests.gateways.telegram.rig import TOKEN


async def test_a_press_answered_already_is_not_an_error() -> None:
    async with FakeTelegram(token=TOKEN) as tg:
        tg.push_message(42, "hello")
        bot = Bot(TOKEN, base_url=tg.base_url)
        await bot.initialize()
        try:
            button = InlineKeyboardButton("Allow", callback_data="x")
            prompt = await bot.send_message(
                42, "allow?", reply_markup=InlineKeyboardMarkup([[button]])
            )
            press = tg.push_callback_query(42, prompt.message_id, data="x")
            callback_id = press["callback_query"]["id"]
            outbound = TelegramOutbound(bot)
            await outbound.answer_button(callback_id, "first answer")
            await outbound.answer_button(callback_id, "again: query is too old")
        finally:
            await bot.shutdown()
    answers = [c for c in tg.calls() if c.method == "answerCallbackQuery"]
    assert [c.ok for c in answers] == [True, False]
