"""The fakes and the real clients on them (python-telegram-bot, discord.py), for their tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import telegram

from duragent.testing import FakeDiscord
from duragent.testing.fake_telegram import FakeTelegram
from tests.testing.discord_client import Listening, connected_client

DISCORD_CHANNEL = 200
"""The guild text channel the ``listening`` fixture's fake Discord has."""


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


@pytest.fixture
async def listening() -> AsyncIterator[Listening]:
    """A fake Discord with one guild text channel, and discord.py connected to it."""
    async with FakeDiscord() as dc:
        await dc.add_channel(DISCORD_CHANNEL)
        async with connected_client(dc) as connected:
            yield connected
