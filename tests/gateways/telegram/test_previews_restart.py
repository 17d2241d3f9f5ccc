"""A SIGKILL while a reply streams into a Telegram chat leaves one final message after restart.

``duragent serve`` runs as a real child (``ServeProcess``) against the fake Bot API. The
preview's id is on disk before its first edit (``frontkit.preview_store``), so the next
start's recovery finds it: killed before the reply was written, the preview is deleted and
the turn answered again; killed after, the reply is put in the preview's place. Either way
the chat ends with one message, the reply, and no half preview.
"""

from __future__ import annotations

import json
from pathlib import Path

from duragent.testing import FakeTelegram, Reply, ScriptedLLMServer
from duragent.testing.serve_process import ServeProcess
from duragent.testing.telegram_faults import FaultRule
from tests.gateways.telegram.rig import BOT, TOKEN, echo_reply, write_workspace
from tests.polling import eventually

DM = 42


def streamed(text: str, pieces: int, delay: float) -> Reply:
    size = max(1, len(text) // pieces)
    chunks = [text[i : i + size] for i in range(0, len(text), size)]
    return Reply(text=text, chunks=chunks, chunk_delay=delay)


def replies_on_disk(workspace: Path) -> list[str]:
    """The final replies recorded in every session (``assistant_response`` events)."""
    found: list[str] = []
    for log in sorted((workspace / "sessions").glob("*/events.jsonl")):
        for line in log.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event.get("type") == "assistant_response":
                found.append(str(event.get("content", "")))
    return found


def previews_left(workspace: Path) -> list[Path]:
    return sorted((workspace / "previews").glob("*.json"))


async def test_killed_before_the_reply_was_written_the_preview_goes_and_one_reply_remains(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / ".duragent"
    half = " ".join(f"half{i}" for i in range(200))
    async with (
        FakeTelegram(token=TOKEN, bot_username=BOT) as tg,
        ScriptedLLMServer(responder=echo_reply) as llm,
    ):
        section = {"bot_token": TOKEN, "base_url": tg.url, "poll_timeout_seconds": 1}
        write_workspace(tmp_path, llm_url=llm.openai_base_url, telegram=section)
        serve = ServeProcess(tmp_path / "duragent.yaml")
        try:
            serve.start()
            await serve.wait_ready()
            llm.enqueue(streamed(half, 200, 0.2), Reply(text="The whole **answer**."))
            tg.push_message(DM, "a question")
            assert await eventually(lambda: bool(tg.edits(DM)), within=60), "no preview edit"
            [preview] = [
                c.answer["result"]["message_id"] for c in tg.calls("sendMessage") if c.answer
            ]
            assert len(previews_left(workspace)) == 1
            serve.kill()

            serve.start()
            await serve.wait_ready()
            assert await eventually(lambda: tg.final_texts(DM) == ["The whole answer."], within=60)
        finally:
            serve.stop()
        assert [d.message_id for d in tg.deleted(DM)] == [preview]
        assert previews_left(workspace) == []


async def test_killed_after_the_reply_was_written_it_is_put_in_the_previews_place(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / ".duragent"
    text = "The *final* reply: " + " ".join(f"part{i}" for i in range(40)) + "."
    async with (
        FakeTelegram(token=TOKEN, bot_username=BOT) as tg,
        ScriptedLLMServer(responder=echo_reply) as llm,
    ):
        section = {"bot_token": TOKEN, "base_url": tg.url, "poll_timeout_seconds": 1}
        write_workspace(tmp_path, llm_url=llm.openai_base_url, telegram=section)
        serve = ServeProcess(tmp_path / "duragent.yaml")
        try:
            serve.start()
            await serve.wait_ready()
            llm.enqueue(streamed(text, 20, 0.15))
            tg.push_message(DM, "a question")
            assert await eventually(lambda: bool(tg.sent_messages(DM)), within=60), "no preview"
            # every edit from now on hangs: the reply is written, and never finished in place
            tg.add_fault(FaultRule.slow(3600, method="editMessageText"))
            assert await eventually(lambda: replies_on_disk(workspace) == [text], within=60)
            assert len(previews_left(workspace)) == 1
            serve.kill()
            tg.clear_faults()

            serve.start()
            await serve.wait_ready()
            finished = text.replace("*", "")
            assert await eventually(lambda: tg.final_texts(DM) == [finished], within=60)
        finally:
            serve.stop()
        assert len(tg.sent_messages(DM)) == 1  # the preview, and nothing sent a second time
        assert tg.deleted(DM) == []
        assert previews_left(workspace) == []
