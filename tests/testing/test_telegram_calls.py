"""The fake Telegram's call record: per-chat peaks and sends made before their retry_after."""

from __future__ import annotations

from duragent.testing.telegram_calls import CallLog, RecordedCall, busiest_window, early_retries
from tests.work import lines_run


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


def _log(n: int, keep: int | None = None) -> CallLog:
    log = CallLog(keep=keep)
    for i in range(n):
        method = "sendMessage" if i % 3 else "getUpdates"
        log.add(method, {}, float(i), float(i), 200, {"ok": True}, chat_id=7, fault=None)
    return log


def test_calls_since_an_index_are_the_kept_calls_from_it_in_order_whatever_is_kept() -> None:
    for keep in (None, 1, 5, 40):
        log = _log(40, keep)
        first_kept = 0 if keep is None else 40 - keep
        for since in (-3, 0, 1, 20, 35, 39, 40, 41, 100):
            for method in (None, "sendMessage", "getUpdates"):
                expected = [
                    i
                    for i in range(max(since, first_kept), 40)
                    if method is None or (method == "sendMessage") == bool(i % 3)
                ]
                got = [c.index for c in log.calls(method, since=since)]
                assert got == expected, (keep, since, method)


def test_polling_for_new_calls_does_not_read_the_whole_record() -> None:
    """A poll for the newest call of a long record costs what is new.

    Counted in Python lines run (``tests/work.py``), not timed: 11 against 200,007 when written.
    """
    log = _log(200_000)

    def work(since: int) -> int:
        return lines_run(lambda: log.calls(since=since))

    assert work(log.count - 1) * 100 < work(0)
