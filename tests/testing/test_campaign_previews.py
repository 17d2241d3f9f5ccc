"""A campaign reads a streamed reply once: from the edit that finished its preview."""

from __future__ import annotations

from typing import Any

from duragent.testing.campaign_previews import FINAL, PREVIEW, PreviewsSeen
from duragent.testing.telegram_calls import RecordedCall

CHAT = 42
TOKEN = "#q1n5#"


def _call(method: str, params: dict[str, Any], *, ok: bool = True, **answer: Any) -> RecordedCall:
    body = {"ok": ok, **answer} if ok else {"ok": False, **answer}
    return RecordedCall(0, method, {"chat_id": CHAT, **params}, 1.0, 1.0, 200, body, CHAT)


def _preview(previews: PreviewsSeen, message_id: int = 7) -> None:
    sent = _call("sendMessage", {"text": f"re {TOKEN}: the fir"}, result={"message_id": message_id})
    assert previews.take(sent) == PREVIEW


def test_a_plain_send_naming_a_message_is_a_preview_not_an_answer() -> None:
    previews = PreviewsSeen()
    _preview(previews)
    assert previews.take(_call("editMessageText", {"message_id": 7, "text": "re: the first"})) == (
        PREVIEW
    )
    assert [p.message_id for p in previews.left_half()] == [7]


def test_the_formatted_edit_that_finishes_it_is_the_answer_once() -> None:
    previews = PreviewsSeen()
    _preview(previews)
    final = _call(
        "editMessageText", {"message_id": 7, "text": f"re {TOKEN}: done", "parse_mode": "HTML"}
    )
    assert previews.take(final) == FINAL
    again = _call(
        "editMessageText",
        {"message_id": 7, "text": f"re {TOKEN}: done", "parse_mode": "HTML"},
        ok=False,
        description="Bad Request: message is not modified",
    )
    assert previews.take(again) == PREVIEW  # finished again after a restart: the same reply
    assert previews.left_half() == []
    assert previews.summary() == "1 / 1 / 0 / 0"


def test_a_first_finishing_edit_telegram_calls_not_modified_still_finishes_it() -> None:
    previews = PreviewsSeen()
    _preview(previews)
    same = _call(
        "editMessageText",
        {"message_id": 7, "text": f"re {TOKEN}: the fir", "parse_mode": "HTML"},
        ok=False,
        description="Bad Request: message is not modified",
    )
    assert previews.take(same) == FINAL


def test_a_refused_finishing_edit_is_no_answer_and_the_preview_stays_half() -> None:
    previews = PreviewsSeen()
    _preview(previews)
    refused = _call(
        "editMessageText",
        {"message_id": 7, "text": "x", "parse_mode": "HTML"},
        ok=False,
        description="Too Many Requests: retry after 1",
    )
    assert previews.take(refused) == PREVIEW
    assert len(previews.left_half()) == 1


def test_a_deleted_preview_is_neither_an_answer_nor_left_half() -> None:
    previews = PreviewsSeen()
    _preview(previews)
    assert previews.take(_call("deleteMessage", {"message_id": 7})) == PREVIEW
    assert previews.left_half() == []
    assert previews.summary() == "1 / 0 / 1 / 0"


def test_formatted_sends_prompts_and_other_messages_edits_are_not_its_business() -> None:
    previews = PreviewsSeen()
    formatted = _call(
        "sendMessage", {"text": f"re {TOKEN}", "parse_mode": "HTML"}, result={"message_id": 1}
    )
    prompt = _call("sendMessage", {"text": TOKEN, "reply_markup": "{}"}, result={"message_id": 2})
    other_edit = _call("editMessageText", {"message_id": 9, "text": "x", "parse_mode": "HTML"})
    assert [previews.take(c) for c in (formatted, prompt, other_edit)] == [None] * 3
    assert previews.by_id == {}


def test_a_plain_notice_is_never_counted_as_a_half_preview() -> None:
    previews = PreviewsSeen()
    notice = _call("sendMessage", {"text": "I gave up on a message"}, result={"message_id": 3})
    assert previews.take(notice) == PREVIEW
    assert previews.left_half() == []
    assert previews.summary() == "0 / 0 / 0 / 0"


def test_a_preview_cut_inside_its_token_is_still_read_when_final() -> None:
    """Seen in the month: the first text stopped at "done: 42-#q9n", so the send named no
    message and its finishing edit was taken for nobody's; the chat waited for ever."""
    previews = PreviewsSeen()
    cut = _call("sendMessage", {"text": "done: 42-#q9n"}, result={"message_id": 68})
    assert previews.take(cut) == PREVIEW
    assert len(previews.left_half()) == 1
    final = _call(
        "editMessageText",
        {"message_id": 68, "text": "done: 42-#q9n29#; line 7895", "parse_mode": "HTML"},
    )
    assert previews.take(final) == FINAL
