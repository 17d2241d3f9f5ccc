from __future__ import annotations

import json
from pathlib import Path

import pytest

from duragent.core.events import Event
from duragent.store.event_log import EventLog
from tests.store.failing_ops import FailingFileOps


def user(seq: int, text: str = "hi") -> Event:
    return Event.user_message(seq, content=text)


def seqs(events: list[Event]) -> list[int]:
    return [e.seq for e in events]


def test_appended_events_read_back_in_order(tmp_path: Path) -> None:
    log = EventLog(tmp_path)
    log.append([user(1), user(2)])
    log.append([user(3, "héllo ✓ 你好")])
    events, report = log.read()
    assert seqs(events) == [1, 2, 3]
    assert events[2].data["content"] == "héllo ✓ 你好"
    assert report.clean


def test_read_after_a_seq_skips_older_events(tmp_path: Path) -> None:
    log = EventLog(tmp_path)
    log.append([user(i) for i in range(1, 11)])
    assert seqs(log.read(7)[0]) == [8, 9, 10]


def test_a_torn_last_line_is_ignored_and_never_glued_to_the_next_append(tmp_path: Path) -> None:
    log = EventLog(tmp_path)
    log.append([user(1), user(2)])
    with log.path.open("ab") as fh:
        fh.write(b'{"seq":3,"timestamp":"x","type":"user_mes')  # crash mid-append
    events, report = log.read()
    assert seqs(events) == [1, 2]
    assert report.torn_tail
    assert report.skipped_malformed == 0
    fresh = EventLog(tmp_path)  # a restarted process knows nothing about the tail
    fresh.append([user(3, "after the crash")])
    events, report = fresh.read()
    assert seqs(events) == [1, 2, 3]
    assert events[-1].data["content"] == "after the crash"
    assert not report.torn_tail
    assert report.skipped_malformed == 1  # the torn fragment, now on a line of its own


def test_duplicate_seqs_keep_the_first_copy(tmp_path: Path) -> None:
    log = EventLog(tmp_path)
    log.append([user(1, "first"), user(2, "second")])
    log.append([user(2, "again")])
    events, report = log.read()
    assert [e.data["content"] for e in events] == ["first", "second"]
    assert report.skipped_duplicates == 1


def test_gaps_and_malformed_lines_are_reported(tmp_path: Path) -> None:
    log = EventLog(tmp_path)
    log.append([user(1)])
    with log.path.open("ab") as fh:
        fh.write(b"not json\n" + user(4).to_json().encode() + b"\n")
    events, report = log.read()
    assert seqs(events) == [1, 4]
    assert report.skipped_malformed == 1
    assert report.gaps == [(2, 3)]


def test_unknown_event_types_are_kept(tmp_path: Path) -> None:
    log = EventLog(tmp_path)
    log.path.write_text(
        json.dumps({"seq": 1, "timestamp": "t", "type": "from_the_future", "x": [1, 2]}) + "\n"
    )
    (event,), _ = log.read()
    assert event.type == "from_the_future"
    assert event.data == {"x": [1, 2]}
    assert json.loads(event.to_json())["x"] == [1, 2]


def test_a_failed_append_leaves_the_file_exactly_as_before(tmp_path: Path) -> None:
    ops = FailingFileOps(partial=11)
    log = EventLog(tmp_path, ops)
    log.append([user(1)])
    before = log.path.read_bytes()
    ops.failing = True
    with pytest.raises(OSError, match="No space left"):
        log.append([user(2), user(3)])
    assert log.path.read_bytes() == before  # the partial write was rolled back
    ops.failing = False
    log.append([user(2), user(3)])
    events, report = log.read()
    assert seqs(events) == [1, 2, 3]
    assert report.clean


def test_a_failed_fsync_is_an_error_and_the_retry_does_not_duplicate(tmp_path: Path) -> None:
    ops = FailingFileOps()
    log = EventLog(tmp_path, ops)
    ops.fail_fsync = True
    with pytest.raises(OSError, match="Input/output"):
        log.append([user(1)])
    ops.fail_fsync = False
    log.append([user(1)])
    events, report = log.read()
    assert seqs(events) == [1]
    assert report.clean


def test_rollover_discards_old_events(tmp_path: Path) -> None:
    log = EventLog(tmp_path)
    log.append([user(i) for i in range(1, 11)])
    assert log.roll_over(6, archive=False) == 6
    assert seqs(log.read()[0]) == [7, 8, 9, 10]
    assert not log.archive_path.exists()


def test_rollover_archives_old_events_once(tmp_path: Path) -> None:
    log = EventLog(tmp_path)
    log.append([user(i) for i in range(1, 11)])
    log.roll_over(4, archive=True)
    log.append([user(11)])
    log.roll_over(8, archive=True)
    assert seqs(log.read_archive()) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert seqs(log.read()[0]) == [9, 10, 11]
    lines = log.archive_path.read_text().splitlines()
    assert len(lines) == 8  # nothing archived twice


def test_a_crash_between_archiving_and_rewriting_duplicates_nothing(tmp_path: Path) -> None:
    log = EventLog(tmp_path)
    log.append([user(i) for i in range(1, 7)])
    # simulate: the archive got seq 1..3 but the live log was not yet rewritten
    log.archive_path.write_text("".join(user(i).to_json() + "\n" for i in (1, 2, 3)))
    log.roll_over(3, archive=True)
    assert len(log.archive_path.read_text().splitlines()) == 3
    assert seqs(log.read()[0]) == [4, 5, 6]


def test_rollover_with_nothing_old_is_a_no_op(tmp_path: Path) -> None:
    log = EventLog(tmp_path)
    log.append([user(5)])
    before = log.path.stat().st_mtime_ns
    assert log.roll_over(3, archive=True) == 0
    assert log.path.stat().st_mtime_ns == before


def test_a_missing_log_reads_as_empty(tmp_path: Path) -> None:
    events, report = EventLog(tmp_path).read()
    assert events == []
    assert report.clean


def test_a_seq_going_backwards_is_reported_and_the_events_are_kept_in_order(
    tmp_path: Path,
) -> None:
    log = EventLog(tmp_path)
    log.append([user(1), user(2), user(4), user(3)])
    events, report = log.read()
    assert seqs(events) == [1, 2, 3, 4]
    assert report.out_of_order == 1
    assert not report.clean


def test_a_missing_log_is_reported_as_missing(tmp_path: Path) -> None:
    events, report = EventLog(tmp_path).read()
    assert events == []
    assert report.missing


def test_the_last_seq_is_read_from_the_end_past_a_torn_line_and_a_long_one(
    tmp_path: Path,
) -> None:
    log = EventLog(tmp_path)
    log.append([user(1), user(2, "x" * 300_000)])  # longer than one block read from the end
    assert log.last_seq() == 2
    with log.path.open("ab") as fh:
        fh.write(b'{"seq": 3, "type": "user_mess')  # a crash mid-write
    assert EventLog(tmp_path).last_seq() == 2  # a torn line is not a record


def test_the_last_seq_of_a_missing_log_is_zero_and_of_garbage_unknown(tmp_path: Path) -> None:
    assert EventLog(tmp_path).last_seq() == 0
    (tmp_path / "events.jsonl").write_bytes(b"not an event\n")
    assert EventLog(tmp_path).last_seq() is None
