"""A graceful stop while a reply is on its way to Telegram: the reply arrives once.

``duragent serve`` runs as a real child (``ServeProcess``) against the fake Bot API, which
takes a while to answer ``sendMessage`` (as Telegram does on a slow day). SIGTERM reaches the
server while the reply's request is under way. The stop must let that request end, so the
delivery is known and recorded, before it closes the HTTP client: a client closed under it
cuts the request ("Server disconnected") while Telegram still takes the message, and the next
life, which finds no delivery recorded, sends the reply a second time (the month of
strangers met exactly this across its switch to PostgreSQL).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from duragent.testing import FakeTelegram, Reply, ScriptedLLMServer
from duragent.testing.serve_process import ServeProcess
from duragent.testing.telegram_faults import FaultRule
from tests.gateways.telegram.rig import BOT, TOKEN, echo_reply, write_workspace
from tests.polling import eventually


def deliveries(workspace: Path) -> int:
    """How many ``delivery`` events the sessions hold."""
    return sum(
        1
        for log in (workspace / "sessions").glob("*/events.jsonl")
        for line in log.read_text(encoding="utf-8").splitlines()
        if json.loads(line).get("type") == "delivery"
    )


async def test_a_reply_under_way_when_the_server_stops_is_delivered_once(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / ".duragent"
    async with (
        FakeTelegram(token=TOKEN, bot_username=BOT) as tg,
        ScriptedLLMServer(responder=echo_reply) as llm,
    ):
        section = {"bot_token": TOKEN, "base_url": tg.url, "poll_timeout_seconds": 1}
        write_workspace(tmp_path, llm_url=llm.openai_base_url, telegram=section)
        slow = FaultRule.slow(2.0, method="sendMessage", chat_id=42, times=1)
        tg.add_fault(slow)
        llm.enqueue(Reply(text="the answer, once"))
        serve = ServeProcess(tmp_path / "duragent.yaml")
        try:
            serve.start()
            await serve.wait_ready()
            tg.push_message(42, "a question")
            assert await eventually(lambda: slow.fired == 1, within=120), "no reply under way"
            # SIGTERM while the fake holds the reply's request (on a thread: the fake
            # answers on this loop meanwhile)
            await asyncio.to_thread(serve.stop)
            assert tg.sent_messages(42) == ["the answer, once"]
            assert deliveries(workspace) == 1  # known as sent before the client closed

            serve.start()  # the next life finds nothing owed
            await serve.wait_ready()
            tg.push_message(42, "and now?")
            llm.enqueue(Reply(text="a second answer"))
            assert await eventually(lambda: len(tg.sent_messages(42)) >= 2, within=120)
        finally:
            serve.stop()
        assert tg.sent_messages(42) == ["the answer, once", "a second answer"]
