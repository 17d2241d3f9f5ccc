"""The Telegram restart campaign writes as its chats' people would: each chat its own."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from duragent.agents.access_spec import QuotaSpec
from duragent.testing.campaign_verdict import plan
from duragent.testing.fake_telegram import FakeTelegram
from duragent.testing.serve_process import ServeProcess
from duragent.testing.telegram_campaign import TelegramCampaign, chatterer_of, writer_of

SENDER_QUOTA = QuotaSpec().messages_per_sender_per_minute


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


def campaign(tg: FakeTelegram, tmp_path: Path, chats: int) -> TelegramCampaign:
    rng = random.Random(3)
    serve = ServeProcess(tmp_path / "duragent.yaml")  # never started: only writing is tested
    return TelegramCampaign(tg, serve, plan(chats, chats * 4, rng), 0, rng, stall_seconds=1)


async def test_a_burst_over_many_chats_never_makes_one_person_write_a_minutes_quota(
    tg: FakeTelegram, tmp_path: Path
) -> None:
    """The simulated year writes hundreds of chats' messages at one simulated minute (after a
    restart, the backlog): one writer for all of them was over the sender limit, the bot
    rightly stopped reading them, and the year stalled on the chats it no longer heard."""
    await campaign(tg, tmp_path, chats=3 * SENDER_QUOTA).write_more()

    senders = Counter(u["message"]["from"]["id"] for u in tg.pending_updates())
    assert sum(senders.values()) > SENDER_QUOTA
    assert max(senders.values()) < SENDER_QUOTA


def test_a_dm_is_written_by_its_own_user_and_a_group_by_people_of_its_own() -> None:
    chats = plan(30, 60, random.Random(1), group_every=3)
    dms = [c for c in chats if not c.group]
    groups = [c for c in chats if c.group]
    assert all(writer_of(c) == c.chat_id for c in dms)  # Telegram: a DM's id is its user's
    people = [writer_of(c) for c in chats]
    people += [chatterer_of(c, n) for c in groups for n in range(4)]
    assert len(set(people)) == len(people)
