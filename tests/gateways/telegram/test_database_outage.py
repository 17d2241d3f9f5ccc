"""A Telegram chat on the PostgreSQL store while the database goes away and comes back.

A reply that could not be recorded is never sent as if it had been, and never dropped
without a word: the person is told the turn failed (their message is saved), and the chat
goes on once the database is back.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from duragent.config import load_workspace
from duragent.frontkit.queue import TURN_FAILED
from duragent.runtime import Runtime
from duragent.testing import FakeTelegram, Reply, ScriptedLLMServer
from duragent.testing.telegram_faults import FaultRule
from tests.gateways.telegram.rig import BOT, TOKEN, echo_reply, write_workspace
from tests.polling import eventually

postgres_db = pytest.importorskip("tests.store.postgres_db")


@asynccontextmanager
async def chat_through(
    outage: Any, root: Path
) -> AsyncIterator[tuple[FakeTelegram, ScriptedLLMServer]]:
    """A Telegram bot whose store is a fresh schema reached through ``outage``."""
    with postgres_db.fresh_schema() as schema:
        async with (
            FakeTelegram(token=TOKEN, bot_username=BOT) as tg,
            ScriptedLLMServer(responder=echo_reply) as llm,
        ):
            telegram = {"bot_token": TOKEN, "base_url": tg.url, "poll_timeout_seconds": 1}
            write_workspace(root, llm_url=llm.openai_base_url, telegram=telegram)
            config = json.loads((root / "duragent.yaml").read_text())
            config["store"] = {"backend": "postgres", "dsn": outage.dsn, "schema": schema}
            (root / "duragent.yaml").write_text(json.dumps(config))
            runtime = Runtime(load_workspace(root), port=0)
            await runtime.start()
            try:
                yield tg, llm
            finally:
                await runtime.aclose()
                outage.down()


@pytest.mark.slow  # ~9 s: the chat goes on only once the pool has reconnected
async def test_a_reply_lost_to_a_database_outage_is_told_and_the_chat_goes_on(
    tmp_path: Path,
) -> None:
    outage = postgres_db.Outage()
    async with chat_through(outage, tmp_path) as (tg, llm):
        tg.push_message(42, "first")
        assert await eventually(lambda: tg.sent_messages(42) == ["re: first"])

        llm.enqueue(Reply(text="never recorded", delay=0.5))
        tg.push_message(42, "second")
        assert await eventually(lambda: len(llm.requests) == 2)  # the message is recorded
        outage.down()  # the reply cannot be written
        assert await eventually(lambda: len(tg.sent_messages(42)) == 2)
        assert tg.sent_messages(42) == ["re: first", TURN_FAILED]

        outage.up()
        tg.push_message(42, "third")
        assert await eventually(lambda: len(tg.sent_messages(42)) == 3)
        assert tg.sent_messages(42)[2] == "re: third"
        asked = [m["content"] for m in llm.requests[-1].json["messages"]]
        assert "second" in asked  # the saved message is part of the conversation
        assert "never recorded" not in asked


@pytest.mark.slow  # ~8 s
async def test_a_reply_sent_before_the_database_went_away_is_not_followed_by_an_apology(
    tmp_path: Path,
) -> None:
    outage = postgres_db.Outage()
    async with chat_through(outage, tmp_path) as (tg, llm):
        tg.push_message(42, "first")
        assert await eventually(lambda: tg.sent_messages(42) == ["re: first"])

        tg.add_fault(FaultRule.slow(1.0, chat_id=42, times=1))  # the send takes a second
        tg.push_message(42, "second")
        assert await eventually(lambda: len(llm.requests) == 2)
        await asyncio.sleep(0.5)  # the reply is recorded and on its way to Telegram
        outage.down()  # the delivery record after the send fails
        assert await eventually(lambda: len(tg.sent_messages(42)) >= 2)
        await asyncio.sleep(2)  # an apology would come within the pool's wait
        assert tg.sent_messages(42) == ["re: first", "re: second"]
