"""A fake Bot API and a real python-telegram-bot client on it, for the fakes' own tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import telegram

from duragent.testing.fake_telegram import FakeTelegram


@pytest.fixture
def timedelta_periods(monkeypatch: pytest.MonkeyPatch) -> None:
    """PTB 22 warns when a duration is read without opting in to timedelta periods."""
    monkeypatch.setenv("PTB_TIMEDELTA", "1")


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    """The fake Bot API, running."""
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
async def bot(tg: FakeTelegram) -> AsyncIterator[telegram.Bot]:
    """PTB's ``Bot`` on the fake, files included."""
    async with telegram.Bot(
        tg.token, base_url=tg.base_url, base_file_url=tg.base_file_url
    ) as client:
        yield client
