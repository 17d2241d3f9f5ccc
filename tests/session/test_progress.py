"""``ChatProgress``: where a chat session stands, from a current snapshot header or its actor."""

from __future__ import annotations

from typing import Any

from duragent.session.progress import ChatProgress, progress_from_header


def header(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "last_event_seq": 9,
        "last_final_reply_seq": 8,
        "last_delivered_seq": 8,
        "last_user_seq": 7,
        "last_settled_seq": 8,
        "agent": "bot",
        "config": {"gateway": "telegram", "gateway_chat_id": "42"},
    }
    return base | fields


def test_a_current_header_says_where_the_chat_stands() -> None:
    progress = progress_from_header("s1", header(), logged_seq=9)
    assert progress == ChatProgress(
        session_id="s1",
        agent="bot",
        gateway="telegram",
        chat_id="42",
        last_reply_seq=8,
        last_delivered_seq=8,
        last_user_seq=7,
        last_settled_seq=8,
        last_answered_seq=8,
    )
    assert not progress.undelivered
    assert not progress.awaits_answer
    assert not progress.settled_unsent


def test_an_approval_request_after_the_last_delivery_is_settled_but_unsent() -> None:
    progress = progress_from_header(
        "s1", header(last_settled_seq=10, last_user_seq=9, last_event_seq=10), logged_seq=10
    )
    assert progress is not None
    assert progress.settled_unsent
    assert not progress.awaits_answer


def test_a_reply_after_the_last_delivery_is_undelivered() -> None:
    progress = progress_from_header("s1", header(last_delivered_seq=4), logged_seq=9)
    assert progress is not None
    assert progress.undelivered


def test_a_message_after_the_last_settled_event_awaits_an_answer() -> None:
    progress = progress_from_header("s1", header(last_user_seq=9), logged_seq=9)
    assert progress is not None
    assert progress.awaits_answer


def test_a_header_the_log_went_on_after_is_not_trusted() -> None:
    assert progress_from_header("s1", header(), logged_seq=10) is None
    assert progress_from_header("s1", header(), logged_seq=None) is None  # log unreadable


def test_a_header_written_before_these_seqs_were_kept_is_not_trusted() -> None:
    old = header()
    del old["last_settled_seq"]
    assert progress_from_header("s1", old, logged_seq=9) is None
