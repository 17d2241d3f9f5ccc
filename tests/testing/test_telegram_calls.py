"""The fake Telegram's call record: per-chat peaks and sends made before their retry_after."""

from __future__ import annotations

from duragent.testing.telegram_calls import RecordedCall, busiest_window, early_retries


def call(index: int, at: float, status: int = 200, retry_after: int | None = None) -> RecordedCall:
    answer: dict[str, object] = {"ok": status == 200}
    if retry_after is not None:
        answer["parameters"] = {"retry_after": retry_after}
    return RecordedCall(index, "sendMessage", {}, at, at + 0.01, status, answer, chat_id=7)


def test_the_busiest_window_counts_sends_closer_than_its_length() -> None:
    assert busiest_window([0.0, 0.5, 0.9, 1.0, 2.5], 1.0) == 3
    assert busiest_window([], 1.0) == 0


def test_a_send_is_early_only_before_the_retry_after_counted_from_the_answer() -> None:
    limited = call(0, 10.0, status=429, retry_after=2)
    patient, hasty = call(1, 12.02), call(1, 11.5)
    assert early_retries([limited, patient]) == []
    (found,) = early_retries([limited, hasty])
    assert found.early is hasty
    assert round(found.too_early_by, 2) == 0.51
