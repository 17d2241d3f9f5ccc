"""``TelegramOutbound`` sends the Bot API's own parameters and reads the raw answer (issue 35).

It no longer goes through ``Bot.send_message`` (which rebuilds every answer as a ``Message``),
so these check, against the fake Bot API over real HTTP, that each call carries exactly what
PTB's typed method would have sent, and that PTB's rate limiter, its errors and the outbox
still act on those calls as before.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import pytest
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, ReplyParameters
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, Forbidden
from telegram.ext import ExtBot

from duragent.frontkit import ChatRef, approval_buttons
from duragent.gateways.telegram.aiohttp_request import AiohttpRequest
from duragent.gateways.telegram.limits import ChatRateLimiter
from duragent.gateways.telegram.outbound import TelegramOutbound
from duragent.gateways.telegram.render import render_approval_prompt, render_chunks
from duragent.gateways.telegram.service import bot_api_base
from duragent.testing import FakeTelegram, FaultRule
from duragent.testing.telegram_calls import RecordedCall
from tests.gateways.telegram.rig import BOT, TOKEN

GROUP = ChatRef("telegram", "-100123")
DM = ChatRef("telegram", "42")


@pytest.fixture(autouse=True)
def _retry_after_as_timedelta(monkeypatch: pytest.MonkeyPatch) -> None:
    """PTB warns (an error under pytest) on ``RetryAfter.retry_after`` as a number."""
    monkeypatch.setenv("PTB_TIMEDELTA", "1")


@dataclass
class Sending:
    tg: FakeTelegram
    bot: ExtBot[int]
    outbound: TelegramOutbound

    def last_two(self, method: str) -> tuple[RecordedCall, RecordedCall]:
        *_, ours, ptbs = self.tg.calls(method)
        return ours, ptbs


@asynccontextmanager
async def sending(*, limiter_retries: int = 5) -> AsyncIterator[Sending]:
    """The outbound port over an ``ExtBot`` with the gateway's rate limiter, as ``service``."""
    limiter = ChatRateLimiter(  # a chat's pace is quicker than Telegram's: two sends a test
        overall_per_second=30, group_per_minute=20, chat_per_second=50, max_retries=limiter_retries
    )
    async with FakeTelegram(token=TOKEN, bot_username=BOT) as tg:
        base, files = bot_api_base(tg.url)
        bot: ExtBot[int] = ExtBot(
            TOKEN,
            base_url=base,
            base_file_url=files,
            request=AiohttpRequest(),
            rate_limiter=limiter,
        )
        typing_bot = Bot(TOKEN, base_url=base, base_file_url=files, request=AiohttpRequest())
        async with bot, typing_bot:
            yield Sending(tg, bot, TelegramOutbound(bot, typing_bot=typing_bot))


@pytest.mark.parametrize(
    ("chat", "reply_to", "quoted"),
    [(GROUP, "7", 7), (DM, "7", None), (GROUP, None, None)],
    ids=["group-reply", "dm-no-quote", "group-no-reply"],
)
@pytest.mark.parametrize(
    "text", ["Use **logrotate**: `rotate 7` & <b>compress</b>.", "plain, no formatting"]
)
async def test_a_reply_sends_what_ptbs_send_message_would_send(
    chat: ChatRef, reply_to: str | None, quoted: int | None, text: str
) -> None:
    async with sending() as s:
        sent = await s.outbound.send_text(chat, text, reply_to=reply_to)
        reply = ReplyParameters(quoted, allow_sending_without_reply=True) if quoted else None
        html = render_chunks(text)[0].html
        await s.bot.send_message(
            chat.chat_id, html, parse_mode=ParseMode.HTML, reply_parameters=reply
        )
        ours, ptbs = s.last_two("sendMessage")
    assert ours.params == ptbs.params
    assert ours.params["parse_mode"] == "HTML"
    assert ("reply_parameters" in ours.params) == (quoted is not None)
    assert ours.answer is not None
    assert sent.message_id == str(ours.answer["result"]["message_id"])


async def test_html_telegram_refuses_is_resent_as_plain_text_as_ptb_would_send_it() -> None:
    text = "Still **readable**."
    async with sending() as s:
        s.tg.add_fault(FaultRule.cant_parse_entities(times=1))
        sent = await s.outbound.send_text(GROUP, text, reply_to="9")
        reply = ReplyParameters(9, allow_sending_without_reply=True)
        plain = render_chunks(text)[0].plain
        await s.bot.send_message(GROUP.chat_id, plain, reply_parameters=reply)
        refused, ours, ptbs = s.tg.calls("sendMessage")
    assert refused.status == 400
    assert ours.params == ptbs.params
    assert "parse_mode" not in ours.params
    assert ours.answer is not None
    assert sent.message_id == str(ours.answer["result"]["message_id"])


async def test_an_approval_prompt_sends_its_buttons_as_ptb_would() -> None:
    async with sending() as s:
        sent = await s.outbound.ask_approval(DM, session_id="s1", call_id="c1", command="ls -la")
        keyboard = InlineKeyboardMarkup(
            [[InlineKeyboardButton(b.label, callback_data=b.data) for b in approval_buttons("c1")]]
        )
        prompt = render_approval_prompt("ls -la")
        await s.bot.send_message(
            DM.chat_id, prompt.html, parse_mode=ParseMode.HTML, reply_markup=keyboard
        )
        ours, ptbs = s.last_two("sendMessage")
    assert ours.params == ptbs.params
    assert ours.answer is not None
    assert sent.message_id == str(ours.answer["result"]["message_id"])


async def test_typing_sends_what_ptbs_send_chat_action_would_send() -> None:
    async with sending() as s:
        await s.outbound.send_typing(DM)
        await s.bot.send_chat_action(DM.chat_id, ChatAction.TYPING)
        ours, ptbs = s.last_two("sendChatAction")
    assert ours.params == ptbs.params == {"chat_id": 42, "action": "typing"}


@pytest.mark.parametrize(
    "limiter_retries", [5, 0], ids=["waited-out-by-the-rate-limiter", "waited-out-by-the-outbox"]
)
async def test_a_429_on_a_reply_is_waited_out_and_the_reply_sent_once(
    limiter_retries: int,
) -> None:
    async with sending(limiter_retries=limiter_retries) as s:
        s.tg.add_fault(FaultRule.too_many_requests(retry_after=1, chat_id=42, times=1))
        sent = await s.outbound.send_text(DM, "hello", reply_to="3")
        limited, delivered = s.tg.calls("sendMessage")
    assert limited.status == 429, "the fault did not fire as scripted: the test proves nothing"
    assert delivered.ok
    assert delivered.params == limited.params
    assert s.tg.early_retries() == []
    assert s.tg.sent_messages(42) == ["hello"]
    assert delivered.answer is not None
    assert sent.message_id == str(delivered.answer["result"]["message_id"])


@pytest.mark.parametrize(
    ("status", "description", "error"),
    [
        (403, "Forbidden: bot was blocked by the user", Forbidden),
        (400, "Bad Request: chat not found", BadRequest),
    ],
)
async def test_telegram_refusing_a_reply_raises_ptbs_error(
    status: int, description: str, error: type[Exception]
) -> None:
    async with sending() as s:
        s.tg.add_fault(FaultRule(kind="server_error", status=status, description=description))
        with pytest.raises(error, match="(?i)" + description.split(": ", 1)[1]):
            await s.outbound.send_text(DM, "hello")
        assert len(s.tg.calls("sendMessage")) == 1  # a refusal is not retried
