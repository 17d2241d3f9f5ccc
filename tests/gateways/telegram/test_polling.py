"""Long polling asks again for what could not be handled: for as long as the store is away
or no node took the update, and, for an update that breaks its handler, until it is skipped
alone.

Real python-telegram-bot against the fake Bot API server over HTTP; the handler is the test's.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
from telegram import Bot, Update

from duragent.cluster import RelayFailedError
from duragent.errors import StorageError
from duragent.gateways.telegram.polling import MAX_ATTEMPTS, poll_updates
from duragent.gateways.telegram.service import bot_api_base
from duragent.store import LeaseHeldError
from duragent.testing import FakeTelegram
from tests.gateways.telegram.rig import BOT, TOKEN
from tests.polling import eventually

QUICK = (0.01,)
"""Pauses between asking again (the real ones are seconds)."""


class Handler:
    """Records each message text it handled; fails the ways a test sets."""

    def __init__(self) -> None:
        self.handled: list[str] = []
        self.calls: Counter[str] = Counter()
        self.store_away = False
        self.breaks_on = "poison"

    async def __call__(self, update: Update) -> None:
        assert update.message is not None
        text = str(update.message.text)
        self.calls[text] += 1
        if self.store_away:
            raise StorageError("appending", OSError(111, "the database is away"))
        if text == self.breaks_on:
            raise ValueError("this update breaks the handler")
        self.handled.append(text)


@asynccontextmanager
async def polling(handler: Callable[[Update], Awaitable[None]]) -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(token=TOKEN, bot_username=BOT) as tg:
        base, files = bot_api_base(tg.url)
        async with Bot(TOKEN, base_url=base, base_file_url=files) as bot:
            task = asyncio.create_task(poll_updates(bot, handler, poll_seconds=0, backoff=QUICK))
            try:
                yield tg
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)


async def test_messages_that_arrive_while_the_store_is_away_are_handled_when_it_is_back() -> None:
    handler = Handler()
    async with polling(handler) as tg:
        handler.store_away = True
        tg.push_message(42, "during the outage")
        tg.push_message(42, "and right after it")  # its chat stops at the first: not tried
        tg.push_message(43, "another chat, too")
        assert await eventually(lambda: handler.calls["during the outage"] > MAX_ATTEMPTS * 3)
        handler.store_away = False  # far more attempts than the poison limit: not skipped
        assert await eventually(lambda: len(handler.handled) == 3)
        await asyncio.sleep(0.2)  # nothing handled twice
    assert sorted(handler.handled) == ["and right after it", "another chat, too",
                                       "during the outage"]  # fmt: skip
    assert handler.handled.index("during the outage") < handler.handled.index("and right after it")


async def test_an_update_that_breaks_its_handler_is_skipped_alone_and_its_chat_goes_on() -> None:
    handler = Handler()
    async with polling(handler) as tg:
        tg.push_message(42, "before")
        tg.push_message(42, "poison")
        tg.push_message(42, "after, same chat")
        tg.push_message(43, "other chat")
        assert await eventually(lambda: "after, same chat" in handler.handled)
        await asyncio.sleep(0.2)  # nothing handled twice, poison not tried again
    assert sorted(handler.handled) == ["after, same chat", "before", "other chat"]
    assert handler.calls["poison"] == MAX_ATTEMPTS + 1
    assert all(n == 1 for text, n in handler.calls.items() if text != "poison")


async def test_an_update_no_node_took_is_asked_for_until_one_does() -> None:
    refusals = 3 * MAX_ATTEMPTS  # far more than the poison limit

    class OwnedElsewhere(Handler):
        """The chat's owner neither takes the update (relay) nor lets its lease run out."""

        async def __call__(self, update: Update) -> None:
            assert update.message is not None
            text = str(update.message.text)
            if text == "owned elsewhere" and self.calls[text] < refusals:
                self.calls[text] += 1
                if self.calls[text] % 2:
                    raise LeaseHeldError("session_x", "b", 1.0)
                raise RelayFailedError("node b did not take the message handed to it")
            await super().__call__(update)

    handler = OwnedElsewhere()
    async with polling(handler) as tg:
        tg.push_message(42, "owned elsewhere")
        tg.push_message(43, "another chat")
        assert await eventually(lambda: "owned elsewhere" in handler.handled)
        await asyncio.sleep(0.2)  # nothing handled twice
    assert sorted(handler.handled) == ["another chat", "owned elsewhere"]
    assert handler.calls["owned elsewhere"] == refusals + 1  # never skipped


@pytest.fixture(autouse=True)
def _quiet_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("CRITICAL", logger="duragent.gateways.telegram.polling")
