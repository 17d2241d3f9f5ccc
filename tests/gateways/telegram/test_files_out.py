"""Files the agent sends (``send_file``) reach a Telegram chat once, by the method of their kind.

The real gateway and runtime against the fake Bot API, which records each ``sendPhoto``,
``sendDocument``, ``sendVoice``… with its bytes and caption, and refuses as Telegram does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from duragent.testing import FaultRule, Reply, ToolCallReply
from tests.frontkit.media_kit import png
from tests.gateways.telegram.rig import Rig, telegram_rig
from tests.polling import eventually

PHOTO = png(48, 32)
SEND_FILE = [{"type": "builtin", "name": "send_file"}]


@pytest.fixture(autouse=True)
def _retry_after_as_timedelta(monkeypatch: pytest.MonkeyPatch) -> None:
    """PTB warns (an error under pytest) on ``RetryAfter.retry_after`` as a number."""
    monkeypatch.setenv("PTB_TIMEDELTA", "1")


def agent_file(rig: Rig, name: str, data: bytes) -> None:
    (rig.root / ".duragent" / "agents" / "bot" / name).write_bytes(data)


def sends(*files: dict[str, Any], text: str = "Here it is.") -> list[Reply]:
    calls = [ToolCallReply(name="send_file", arguments=a, id=f"f{i}") for i, a in enumerate(files)]
    return [Reply(tool_calls=calls), Reply(text=text)]


async def test_a_chart_the_model_sends_arrives_once_as_a_photo_after_the_text(
    tmp_path: Path,
) -> None:
    async with telegram_rig(tmp_path, tools=SEND_FILE) as rig:
        agent_file(rig, "chart.png", PHOTO)
        rig.llm.enqueue(*sends({"path": "chart.png", "caption": "Sales by month"}))
        rig.tg.push_message(42, "the chart please")
        assert await eventually(lambda: len(rig.tg.sent_files(42)) == 1)
        await rig.settle()
        [photo] = rig.tg.sent_files(42)
        assert rig.tg.sent_messages(42) == ["Here it is."]
        text_call = rig.tg.calls("sendMessage", chat_id=42)[0]
    assert (photo.kind, photo.data, photo.caption, photo.source) == (
        "photo",
        PHOTO,
        "Sales by month",
        "upload",
    )
    assert text_call.time < photo.time


async def test_a_document_and_a_voice_note_go_by_their_own_methods(tmp_path: Path) -> None:
    pdf = b"%PDF-1.4\n% a report\n"
    voice = b"OggS\x00\x02 a voice note"
    async with telegram_rig(tmp_path, tools=SEND_FILE) as rig:
        agent_file(rig, "report.pdf", pdf)
        agent_file(rig, "note.ogg", voice)
        rig.llm.enqueue(*sends({"path": "report.pdf"}, {"path": "note.ogg"}, text="Both."))
        rig.tg.push_message(42, "report and a note")
        assert await eventually(lambda: len(rig.tg.sent_files(42)) == 2)
        await rig.settle()
        files = rig.tg.sent_files(42)
    assert [(f.kind, f.data, f.file_name) for f in files] == [
        ("document", pdf, "report.pdf"),
        ("voice", voice, "note.ogg"),
    ]


async def test_a_photo_telegram_refuses_as_a_photo_is_sent_as_a_document(tmp_path: Path) -> None:
    thin = png(2, 100)  # Telegram refuses it as a photo: PHOTO_INVALID_DIMENSIONS
    async with telegram_rig(tmp_path, tools=SEND_FILE) as rig:
        agent_file(rig, "thin.png", thin)
        rig.llm.enqueue(*sends({"path": "thin.png"}))
        rig.tg.push_message(42, "the thin one")
        assert await eventually(lambda: len(rig.tg.sent_files(42)) == 1)
        await rig.settle()
        [sent] = rig.tg.sent_files(42)
        refused = rig.tg.calls("sendPhoto")
    assert (sent.kind, sent.data) == ("document", thin)
    assert [c.status for c in refused] == [400]


async def test_a_429_on_send_photo_is_waited_out_and_the_photo_sent_once(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path, tools=SEND_FILE) as rig:
        agent_file(rig, "chart.png", PHOTO)
        rig.tg.add_fault(FaultRule.too_many_requests(retry_after=1, method="sendPhoto", times=1))
        rig.llm.enqueue(*sends({"path": "chart.png"}))
        rig.tg.push_message(42, "the chart please")
        assert await eventually(lambda: len(rig.tg.sent_files(42)) == 1)
        await rig.settle()
        statuses = [c.status for c in rig.tg.calls("sendPhoto")]
        assert statuses == [429, 200], "the fault did not fire as scripted: the test proves nothing"
        assert rig.tg.early_retries() == []
        assert [f.data for f in rig.tg.sent_files(42)] == [PHOTO]
        assert rig.tg.sent_messages(42) == ["Here it is."]
