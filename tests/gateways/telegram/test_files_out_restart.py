"""A SIGKILL while a reply's file is on its way to Telegram re-sends only that file.

``duragent serve`` runs as a real child (``ServeProcess``) against the fake Bot API. The
model sends a file with its reply; the reply is written (with its file), its text reaches
the chat and is recorded as the reply's first part (a ``delivery`` event with ``parts``), and
the file's request is held by the fake; the server is SIGKILLed while it waits. The next
server's recovery sends only the parts after those recorded: the text is not sent again,
and the whole reply's ``delivery`` record follows the file (``frontkit.delivery``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from duragent.testing import FakeTelegram, Reply, ScriptedLLMServer, ToolCallReply
from duragent.testing._telegram_outbound_media import SentFile
from duragent.testing.serve_process import ServeProcess
from duragent.testing.telegram_faults import FaultRule
from tests.frontkit.media_kit import png
from tests.gateways.telegram.rig import BOT, TOKEN, echo_reply, write_workspace
from tests.polling import eventually

PHOTO = png(64, 40)
NOTES = b"minutes of the meeting\n" * 40


def deliveries(workspace: Path) -> list[dict[str, object]]:
    """The ``delivery`` events of every session, in order."""
    found = []
    for log in sorted((workspace / "sessions").glob("*/events.jsonl")):
        for line in log.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event.get("type") == "delivery":
                found.append(event)
    return found


@dataclass
class Restarted:
    """What the chat got around a SIGKILL while the file's request was held, and the model."""

    files: list[SentFile]
    texts: list[str]
    requests: int


async def kill_while_the_file_is_held(
    tmp_path: Path, file: str, data: bytes, method: str, ask: str, text: str
) -> Restarted:
    """The model sends ``file`` with ``text``; ``serve`` is SIGKILLed while the fake holds
    ``method`` (the text sent and recorded as the first part), then started again until the
    whole reply is recorded."""
    workspace = tmp_path / ".duragent"
    async with (
        FakeTelegram(token=TOKEN, bot_username=BOT) as tg,
        ScriptedLLMServer(responder=echo_reply) as llm,
    ):
        section = {"bot_token": TOKEN, "base_url": tg.url, "poll_timeout_seconds": 1}
        tools = [{"type": "builtin", "name": "send_file"}]
        write_workspace(tmp_path, llm_url=llm.openai_base_url, telegram=section, tools=tools)
        (workspace / "agents" / "bot" / file).write_bytes(data)
        held = FaultRule.slow(3600, method=method, times=1)
        tg.add_fault(held)
        call = ToolCallReply(name="send_file", arguments={"path": file}, id="f1")
        llm.enqueue(Reply(tool_calls=[call]), Reply(text=text))
        serve = ServeProcess(tmp_path / "duragent.yaml")
        try:
            serve.start()
            await serve.wait_ready()
            tg.push_message(42, ask)
            assert await eventually(lambda: held.fired == 1, within=120), f"no {method} held"
            assert tg.sent_messages(42) == [text]
            assert [d.get("parts") for d in deliveries(workspace)] == [1]  # the text's record
            serve.kill()

            serve.start()
            await serve.wait_ready()
            assert await eventually(lambda: len(deliveries(workspace)) == 2, within=120)
        finally:
            serve.stop()
        return Restarted(tg.sent_files(42), tg.sent_messages(42), len(llm.requests))


async def test_a_sigkill_before_the_file_is_sent_delivers_it_once_after_the_restart(
    tmp_path: Path,
) -> None:
    got = await kill_while_the_file_is_held(
        tmp_path, "chart.png", PHOTO, "sendPhoto", "the chart please", "Here is the chart."
    )
    assert [(f.kind, f.data) for f in got.files] == [("photo", PHOTO)]
    assert got.texts == ["Here is the chart."]  # once: its part was recorded before the kill
    assert "parts" not in deliveries(tmp_path / ".duragent")[-1]  # the whole reply
    assert got.requests == 2  # the turn was not run again


async def test_a_sigkill_while_a_document_is_held_sends_the_text_once_and_the_document_again(
    tmp_path: Path,
) -> None:
    """Killed while the fake holds ``sendDocument``: the text once, the document once or twice.

    The text was recorded as the reply's first part before the document went, so the
    restarted server's recovery sends the document only. The document's own request was in
    flight when the process died: no platform lets a send and a local fsync be one step, so
    the part in flight is at least once by nature (Telegram may have taken it before the
    kill; this fake holds it until the test ends, so here it arrives once), never more than
    once per crash.
    """
    got = await kill_while_the_file_is_held(
        tmp_path, "notes.txt", NOTES, "sendDocument", "the notes please", "Here are the notes."
    )
    assert got.texts == ["Here are the notes."]
    assert 1 <= len(got.files) <= 2
    assert {(f.kind, f.data) for f in got.files} == {("document", NOTES)}
    assert "parts" not in deliveries(tmp_path / ".duragent")[-1]
    assert got.requests == 2  # the turn was not run again
