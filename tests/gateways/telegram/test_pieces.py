"""A long reply's pieces are the messages ``send_text`` sends, and each goes out as itself.

``Delivery`` sends a long reply message by message (``TelegramOutbound.pieces``), recording
each, so a crash re-sends only the one in flight. That holds only if the pieces are exactly
the chunks the whole reply is sent as: the same cuts, the same HTML, the first alone
quoting, the plain-text fallback per chunk. These check it against the fake Bot API.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.core.events import EventType
from duragent.frontkit import Delivery, SentMessage
from duragent.frontkit.outbox import UNDELIVERED, UndeliveredError
from duragent.gateways.telegram.outbound import TelegramOutbound
from duragent.gateways.telegram.render import render_chunks
from duragent.testing import FaultRule, Reply
from duragent.turns import Complete
from tests.gateways.telegram.test_outbound import DM, GROUP, sending
from tests.turns.turn_fixtures import harness

LONG = (
    "**Report** of the week, with `code` & <tags>.\n\n"
    + "\n\n".join(f"Paragraph {i}: " + "word " * 120 for i in range(10))
    + "\n\n```python\n"
    + "\n".join(f"print({i})  # a line of code" for i in range(200))
    + "\n```\n\nThat is *all*."
)
"""Four messages on Telegram: prose cut at paragraphs, then a code block cut in two."""


@pytest.fixture(autouse=True)
def _retry_after_as_timedelta(monkeypatch: pytest.MonkeyPatch) -> None:
    """PTB warns (an error under pytest) on ``RetryAfter.retry_after`` as a number."""
    monkeypatch.setenv("PTB_TIMEDELTA", "1")


async def test_the_pieces_of_a_long_reply_are_exactly_the_messages_send_text_sends() -> None:
    async with sending() as s:
        pieces = s.outbound.pieces(LONG)
        await s.outbound.send_text(GROUP, LONG, reply_to="7")
        whole = s.tg.calls("sendMessage")
        for number, piece in enumerate(pieces):
            await s.outbound.send_text(GROUP, piece, reply_to="7" if number == 0 else None)
        apart = s.tg.calls("sendMessage")[len(whole) :]
    assert len(pieces) == 4
    assert [call.params["text"] for call in whole] == list(pieces)
    assert list(pieces) == [chunk.html for chunk in render_chunks(LONG)]
    assert [call.params for call in apart] == [call.params for call in whole]
    assert [("reply_parameters" in call.params) for call in apart] == [True, False, False, False]
    assert pieces[3].startswith('<pre><code class="language-python">')  # reopened: still code
    assert s.outbound.pieces(LONG) == pieces  # the same text, the same pieces


async def test_a_piece_whose_html_telegram_refuses_is_sent_as_its_own_visible_text() -> None:
    async with sending() as s:
        piece = s.outbound.pieces(LONG)[2]
        s.tg.add_fault(FaultRule.cant_parse_entities(times=1))
        await s.outbound.send_text(DM, piece)
        refused, plain = s.tg.calls("sendMessage")
    assert refused.status == 400
    assert refused.params["text"] == piece
    assert plain.params["text"] == render_chunks(LONG)[2].plain
    assert "parse_mode" not in plain.params


async def test_a_piece_finishing_a_preview_is_edited_into_it_alone() -> None:
    async with sending() as s:
        first = s.outbound.pieces(LONG)[0]
        preview = await s.outbound.send_preview(DM, "Report of the")
        sent = await s.outbound.finish_preview(preview, first)
        [edit] = s.tg.calls("editMessageText")
        sends = s.tg.calls("sendMessage")
    assert sent == preview
    assert (edit.params["text"], edit.params["parse_mode"]) == (first, "HTML")
    assert len(sends) == 1  # the preview itself: nothing follows the first piece


async def test_a_long_reply_whose_third_message_is_given_up_on_sends_only_that_one_again(
    tmp_path: Path,
) -> None:
    async with sending() as s, harness(tmp_path) as h:
        outbound = TelegramOutbound(s.bot, retry_pauses=(), delivery_retry_seconds=0.0)
        s.tg.add_fault(FaultRule.server_failure(every=3, times=1))  # the third sendMessage
        h.server.enqueue(Reply(text=LONG))
        sid = await h.runner.session_for_chat("telegram", GROUP.chat_id, "bot")
        result = await h.runner.run(sid, "the report, please")
        assert isinstance(result, Complete)
        delivery = Delivery(h.runner, outbound)
        with pytest.raises(UndeliveredError):
            await delivery.deliver(GROUP, result, reply_to="7")
        last = await delivery.deliver(GROUP, result, reply_to="7")
        calls = s.tg.calls("sendMessage")
        events = await h.registry.handle(sid).events()
    pieces = outbound.pieces(LONG)
    taken = [call.params["text"] for call in calls if call.ok]
    assert [call.status for call in calls if not call.ok] == [500]
    assert taken == [pieces[0], pieces[1], UNDELIVERED, pieces[2], pieces[3]]
    assert [("reply_parameters" in call.params) for call in calls if call.ok] == [
        True,
        False,
        False,
        False,
        False,
    ]
    assert isinstance(last, SentMessage)
    assert [e.data.get("parts") for e in events if e.type == EventType.DELIVERY] == [
        1,
        2,
        3,
        None,
    ]
