"""What the Telegram gateway sends on a bad day: HTML refused, long replies, 429s, 5xx, drops.

Faults are scripted in the fake Bot API server; the gateway sees them through the real
python-telegram-bot client, as it would see Telegram's answers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.frontkit.outbox import UNDELIVERED
from duragent.testing import FaultRule, Reply
from tests.gateways.telegram.rig import assert_never_logged, log_everything, telegram_rig
from tests.polling import eventually


@pytest.fixture(autouse=True)
def _retry_after_as_timedelta(monkeypatch: pytest.MonkeyPatch) -> None:
    """PTB warns (an error under pytest) on ``RetryAfter.retry_after`` as a number."""
    monkeypatch.setenv("PTB_TIMEDELTA", "1")


async def test_markdown_is_sent_as_telegram_html(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        rig.llm.enqueue(Reply(text="This is **bold** and `code`."))
        rig.tg.push_message(42, "format something")
        assert await rig.replies(42) == ["This is bold and code."]
    sent = rig.tg.calls("sendMessage")[0].params
    assert sent["parse_mode"] == "HTML"
    assert sent["text"] == "This is <b>bold</b> and <code>code</code>."


async def test_a_chunk_whose_html_telegram_refuses_is_resent_as_plain_text(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log_everything(caplog)
    async with telegram_rig(tmp_path) as rig:
        rig.tg.add_fault(FaultRule.cant_parse_entities(times=1))
        rig.llm.enqueue(Reply(text="Still **readable**."))
        rig.tg.push_message(42, "format something")
        assert await rig.replies(42) == ["Still readable."]
        await rig.settle()
    refused, resent = rig.tg.calls("sendMessage")
    assert refused.status == 400
    assert resent.ok
    assert "parse_mode" not in resent.params
    assert resent.params["text"] == "Still readable."
    assert_never_logged(caplog)


async def test_a_reply_longer_than_a_message_is_split_into_messages_that_fit(
    tmp_path: Path,
) -> None:
    paragraphs = [f"Paragraph {i}: " + "word " * 180 for i in range(8)]  # ~7,400 characters
    long = "\n\n".join(paragraphs)
    async with telegram_rig(tmp_path) as rig:
        rig.llm.enqueue(Reply(text=long))
        rig.tg.push_message(42, "tell me a lot")
        await rig.replies(42, 2)
        await rig.settle()
        texts = rig.tg.sent_messages(42)
    assert len(texts) >= 2
    assert all(len(t) <= 4096 for t in texts)
    assert " ".join(" ".join(texts).split()) == " ".join(long.split())


async def test_flood_control_loses_nothing_and_never_retries_early(tmp_path: Path) -> None:
    chats = [101, 102, 103, 104, 105]
    rounds = 9  # 45 replies: the fake answers 429 to the 20th and the 40th send
    async with telegram_rig(tmp_path) as rig:
        rig.tg.add_fault(FaultRule.too_many_requests(retry_after=1, every=20))
        for n in range(rounds):  # each chat asks, then waits (a busy chat merges its messages)
            for chat in chats:
                rig.tg.push_message(chat, f"message {n}")
            for chat in chats:
                await rig.replies(chat, n + 1)
        await rig.settle()
        limited = [c for c in rig.tg.calls("sendMessage") if c.status == 429]
        assert len(limited) == 2, "the fault did not fire as scripted: the test proves nothing"
        assert rig.tg.early_retries() == []
        for chat in chats:
            expected = [f"re: message {n}" for n in range(rounds)]
            assert rig.tg.sent_messages(chat) == expected


async def test_a_reply_refused_by_flood_control_waits_it_out_and_is_never_apologised_for(
    tmp_path: Path,
) -> None:
    """Issue 34: six 429s in a row turned an existing answer into "Sorry, I could not answer"."""
    async with telegram_rig(tmp_path) as rig:
        rig.tg.add_fault(FaultRule.too_many_requests(retry_after=1, chat_id=42, times=6))
        rig.tg.push_message(42, "first")
        limited = lambda: [c for c in rig.tg.calls("sendMessage") if c.status == 429]  # noqa: E731
        assert await eventually(lambda: len(limited()) >= 1)
        rig.tg.push_message(42, "second")  # recorded meanwhile; answered after the first
        assert await rig.replies(42, 2) == ["re: first", "re: second"]
        await rig.settle()
        assert len(limited()) == 6, "the fault did not fire as scripted: the test proves nothing"
        assert rig.tg.early_retries() == []
        assert rig.tg.sent_messages(42) == ["re: first", "re: second"]
        assert len(rig.llm.requests) == 2


async def test_a_reply_refused_past_the_delivery_expiry_is_told_once_and_never_sent_twice(
    tmp_path: Path,
) -> None:
    async with telegram_rig(tmp_path, delivery_retry_seconds=1) as rig:
        rig.tg.add_fault(FaultRule.too_many_requests(retry_after=1, chat_id=42, times=6))
        rig.tg.push_message(42, "first")
        assert await rig.replies(42) == [UNDELIVERED]
        rig.tg.push_message(42, "second")
        assert await rig.replies(42, 2) == [UNDELIVERED, "re: second"]
        await rig.settle()
        await rig.restart()  # the given-up reply is older than one delivered: not re-sent
        await rig.settle()
        assert rig.tg.sent_messages(42) == [UNDELIVERED, "re: second"]
        assert rig.tg.early_retries() == []


async def test_a_send_that_failed_on_the_server_or_the_network_is_retried(
    tmp_path: Path,
) -> None:
    async with telegram_rig(tmp_path) as rig:
        rig.tg.add_fault(FaultRule.server_failure(502, times=1))
        rig.tg.push_message(42, "first")
        assert await rig.replies(42) == ["re: first"]
        rig.tg.add_fault(FaultRule.dropped(times=1))
        rig.tg.push_message(43, "second")
        assert await rig.replies(43) == ["re: second"]
        await rig.settle()
    statuses = [c.status for c in rig.tg.calls("sendMessage")]
    assert statuses == [502, 200, 0, 200]


async def test_get_updates_failing_shows_reconnecting_then_running(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        assert (await rig.readyz())["gateways"] == {"telegram": "running"}
        rig.tg.add_fault(FaultRule.server_failure(502, method="getUpdates", times=2))
        states: set[str] = set()

        async def recorded_state() -> bool:
            state = (await rig.readyz())["gateways"]["telegram"]
            states.add(state)
            return state.startswith("reconnecting")

        assert await eventually(recorded_state), states
        rig.tg.push_message(42, "are you back?")
        assert await rig.replies(42) == ["re: are you back?"]
        assert (await rig.readyz())["gateways"] == {"telegram": "running"}
    assert all(f.exhausted for f in rig.tg.faults)


@pytest.mark.parametrize("reply", ["[](https://example.com)", "#", "```\n```"])
async def test_a_reply_whose_markdown_shows_nothing_is_sent_as_written(
    tmp_path: Path, reply: str
) -> None:
    async with telegram_rig(tmp_path) as rig:
        rig.llm.enqueue(Reply(text=reply))
        rig.tg.push_message(42, "say something odd")
        assert await rig.replies(42) == [reply]
        await rig.settle()
        await rig.restart()  # delivered: recovery has nothing to send again
        await rig.settle()
        assert rig.tg.sent_messages(42) == [reply]
