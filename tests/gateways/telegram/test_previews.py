"""Replies streamed into a Telegram chat, end to end: the fake Bot API records what users saw.

A scripted model streams its reply slowly (``chunk_delay``); the real gateway shows it as a
preview message (plain), edits it as text arrives, and finishes it in place with the
formatted reply (``frontkit.preview``, ``gateways.telegram.previews``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

import pytest

from duragent.gateways.telegram.previews import DM_EVERY
from duragent.gateways.telegram.render import render_chunks
from duragent.testing import Fault, FaultRule, Reply, ToolCallReply
from duragent.testing.telegram_calls import RecordedCall
from tests.gateways.telegram.rig import ASK_POLICY, BASH_TOOL, Rig, telegram_rig
from tests.polling import eventually

DM = 42


@pytest.fixture(autouse=True)
def _retry_after_as_timedelta(monkeypatch: pytest.MonkeyPatch) -> None:
    """PTB warns (an error under pytest) on ``RetryAfter.retry_after`` as a number."""
    monkeypatch.setenv("PTB_TIMEDELTA", "1")


def slow(
    text: str, *, pieces: int = 20, delay: float = 0.15, tool_calls: Sequence[ToolCallReply] = ()
) -> Reply:
    """``text`` streamed in about ``pieces`` parts, ``delay`` seconds apart."""
    size = max(1, len(text) // pieces)
    chunks = [text[i : i + size] for i in range(0, len(text), size)]
    return Reply(text=text, chunks=chunks, chunk_delay=delay, tool_calls=tool_calls)


def sends(rig: Rig, chat: int = DM) -> list[RecordedCall]:
    return [c for c in rig.tg.calls("sendMessage", chat_id=chat) if c.ok]


def previews_left(rig: Rig) -> list[Path]:
    return sorted((rig.root / ".duragent" / "previews").glob("*.json"))


async def test_a_reply_being_written_is_previewed_edited_and_finished_in_place(
    tmp_path: Path,
) -> None:
    text = "**Streaming** works: " + " ".join(f"word{i}" for i in range(40)) + "."
    async with telegram_rig(tmp_path) as rig:
        rig.llm.enqueue(slow(text))
        rig.tg.push_message(DM, "tell me")
        await rig.settle()
        [preview] = sends(rig)
        mid = preview.answer["result"]["message_id"] if preview.answer else 0
        edits = rig.tg.edits(DM, mid)
        assert "parse_mode" not in preview.params  # plain: half-written Markdown never fails
        assert str(preview.params["text"]).startswith("**Streaming**")
        assert [e.parse_mode for e in edits[:-1]] == [None] * (len(edits) - 1)
        assert len(edits) >= 2  # edited while written, then finished
        assert edits[-1].parse_mode == "HTML"
        assert edits[-1].entities[0]["type"] == "bold"
        assert rig.tg.final_texts(DM) == [text.replace("**", "")]
        assert rig.tg.sent_messages(DM) == [preview.params["text"]]  # one message in all
        assert previews_left(rig) == []


async def test_preview_edits_keep_telegrams_pace_in_a_chat(tmp_path: Path) -> None:
    pieces = 48
    text = " ".join(f"w{i}" for i in range(200))
    async with telegram_rig(tmp_path) as rig:
        rig.llm.enqueue(slow(text, pieces=pieces, delay=0.1))
        rig.tg.push_message(DM, "a long one")
        await rig.settle()
        [sent] = rig.tg.send_times(DM)
        plain = [e.time for e in rig.tg.edits(DM) if e.parse_mode is None]
        finished = rig.tg.final_texts(DM)
    times = [sent, *plain]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert plain, "the preview was never edited"
    assert min(gaps) >= DM_EVERY  # never more than one edit a DM_EVERY seconds
    assert len(plain) < pieces / 4  # not an edit per piece written
    assert finished == [text]


async def test_a_long_reply_still_splits_with_its_first_part_in_the_preview(
    tmp_path: Path,
) -> None:
    text = "\n\n".join(f"Paragraph {i}: " + "lorem ipsum dolor " * 20 for i in range(20))
    expected = [chunk.plain for chunk in render_chunks(text)]
    assert len(expected) == 2
    async with telegram_rig(tmp_path) as rig:
        rig.llm.enqueue(slow(text, pieces=30, delay=0.1))
        rig.tg.push_message(DM, "write a lot")
        await rig.settle()
        first, second = sends(rig)
        mid = first.answer["result"]["message_id"] if first.answer else 0
        assert "parse_mode" not in first.params  # the preview
        assert rig.tg.edits(DM, mid)[-1].parse_mode == "HTML"  # finished in place
        assert all(len(e.text) <= 4096 for e in rig.tg.edits(DM))
        assert rig.tg.message_text(DM, mid) == expected[0]  # the preview became part one
        assert second.params.get("parse_mode") == "HTML"
        assert rig.tg.final_texts(DM) == expected


async def test_refused_edits_only_slow_the_preview_and_the_reply_arrives_once(
    tmp_path: Path,
) -> None:
    text = "Flood control " + " ".join(f"n{i}" for i in range(40)) + " done."
    async with telegram_rig(tmp_path) as rig:
        rig.tg.add_fault(FaultRule.too_many_requests(1, method="editMessageText", times=3))
        rig.llm.enqueue(slow(text))
        rig.tg.push_message(DM, "go")
        await rig.settle()
        refused = [c for c in rig.tg.calls("editMessageText") if c.status == 429]
        assert len(refused) == 3
        assert len(sends(rig)) == 1
        assert rig.tg.final_texts(DM) == [text]
        assert previews_left(rig) == []


async def test_an_approval_mid_turn_ends_the_preview_with_the_text_so_far(tmp_path: Path) -> None:
    said = "I will run *echo ok* for you, " + " ".join(f"step{i}" for i in range(30)) + "."
    asks = slow(said, tool_calls=[ToolCallReply(name="bash", arguments={"command": "echo ok"})])
    async with telegram_rig(tmp_path, tools=BASH_TOOL, policy=ASK_POLICY) as rig:
        rig.llm.enqueue(asks)
        rig.tg.push_message(DM, "run it")
        await rig.settle()
        preview, prompt = sends(rig)
        mid = preview.answer["result"]["message_id"] if preview.answer else 0
        assert "reply_markup" in prompt.params  # the request with its buttons, after the text
        assert rig.tg.edits(DM, mid)[-1].parse_mode == "HTML"
        assert rig.tg.final_texts(DM)[0] == said.replace("*", "")
        assert "echo ok" in rig.tg.final_texts(DM)[1]
        assert previews_left(rig) == []


async def test_a_turn_that_fails_mid_stream_deletes_its_preview(tmp_path: Path) -> None:
    words = [f"half{i} " for i in range(30)]
    broken = Reply(
        text="".join(words),
        chunks=words,
        chunk_delay=0.1,
        stream_error=Fault(status=400, message="the model gave up"),
        stream_error_after=25,
    )
    async with telegram_rig(tmp_path) as rig:
        rig.llm.enqueue(broken)
        rig.tg.push_message(DM, "try")
        await rig.settle()
        preview = sends(rig)[0]
        mid = preview.answer["result"]["message_id"] if preview.answer else 0
        assert [d.message_id for d in rig.tg.deleted(DM)] == [mid]
        [told] = rig.tg.final_texts(DM)
        assert "half" not in told  # the failure, told; no half reply left
        assert previews_left(rig) == []


async def test_a_quick_reply_is_sent_whole_without_a_preview(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        rig.llm.enqueue(Reply(text="**Quick** one."))
        rig.tg.push_message(DM, "hi")
        await rig.settle()
        assert rig.tg.calls("editMessageText") == []
        [reply] = sends(rig)
        assert reply.params["parse_mode"] == "HTML"
        assert await eventually(lambda: rig.tg.final_texts(DM) == ["Quick one."])
