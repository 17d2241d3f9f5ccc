"""A SIGKILL after a reply with a file is recorded, before the file reaches Telegram, loses nothing.

``duragent serve`` runs as a real child (``ServeProcess``) against the fake Bot API. The
model sends a chart with its reply; the reply is written (with its file), its text reaches
the chat, and the ``sendPhoto`` is held by the fake; the server is SIGKILLed while it waits.
The next server's recovery sends the reply again with its file: the photo arrives once, and
the ``delivery`` record covers it. The text comes twice: one record covers the whole reply,
so a crash between its parts sends all of it again (``frontkit.delivery``).
"""

from __future__ import annotations

import json
from pathlib import Path

from duragent.testing import FakeTelegram, Reply, ScriptedLLMServer, ToolCallReply
from duragent.testing.serve_process import ServeProcess
from duragent.testing.telegram_faults import FaultRule
from tests.frontkit.media_kit import png
from tests.gateways.telegram.rig import BOT, TOKEN, echo_reply, write_workspace
from tests.polling import eventually

PHOTO = png(64, 40)


def deliveries(workspace: Path) -> list[dict[str, object]]:
    """The ``delivery`` events of every session, in order."""
    found = []
    for log in sorted((workspace / "sessions").glob("*/events.jsonl")):
        for line in log.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event.get("type") == "delivery":
                found.append(event)
    return found


async def test_a_sigkill_before_the_file_is_sent_delivers_it_once_after_the_restart(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / ".duragent"
    async with (
        FakeTelegram(token=TOKEN, bot_username=BOT) as tg,
        ScriptedLLMServer(responder=echo_reply) as llm,
    ):
        section = {"bot_token": TOKEN, "base_url": tg.url, "poll_timeout_seconds": 1}
        tools = [{"type": "builtin", "name": "send_file"}]
        write_workspace(tmp_path, llm_url=llm.openai_base_url, telegram=section, tools=tools)
        (workspace / "agents" / "bot" / "chart.png").write_bytes(PHOTO)
        held = FaultRule.slow(3600, method="sendPhoto", times=1)
        tg.add_fault(held)
        call = ToolCallReply(name="send_file", arguments={"path": "chart.png"}, id="f1")
        llm.enqueue(Reply(tool_calls=[call]), Reply(text="Here is the chart."))
        serve = ServeProcess(tmp_path / "duragent.yaml")
        try:
            serve.start()
            await serve.wait_ready()
            tg.push_message(42, "the chart please")
            assert await eventually(lambda: held.fired == 1, within=60), "no sendPhoto held"
            assert tg.sent_messages(42) == ["Here is the chart."]
            assert deliveries(workspace) == []
            serve.kill()

            serve.start()
            await serve.wait_ready()
            assert await eventually(lambda: len(deliveries(workspace)) == 1, within=60)
        finally:
            serve.stop()
        files = tg.sent_files(42)
        texts = tg.sent_messages(42)
    assert [(f.kind, f.data) for f in files] == [("photo", PHOTO)]
    assert texts == ["Here is the chart.", "Here is the chart."]
    assert len(llm.requests) == 2  # the turn was not run again
