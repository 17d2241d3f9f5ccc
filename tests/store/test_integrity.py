"""Which events that must exist are missing, and which OS errors are the machine's."""

from __future__ import annotations

import errno

from duragent.core.events import Event
from duragent.errors import StorageError
from duragent.store import is_disk_full, storage_error
from duragent.store.integrity import merge_events, missing_events


def user(seq: int) -> Event:
    return Event.user_message(seq, content=f"m{seq}")


def test_a_complete_log_after_the_checkpoint_is_not_missing_anything() -> None:
    assert missing_events([user(4), user(5), user(6)], 3, 5) is None


def test_events_after_the_snapshot_are_allowed_and_none_needed_is_fine() -> None:
    assert missing_events([], 5, 5) is None
    assert missing_events([user(6)], 5, 5) is None


def test_a_hole_a_late_start_and_a_short_log_are_each_named() -> None:
    assert missing_events([user(4), user(6)], 3, 6) == "events 5 are missing (the log has a hole)"
    assert "events 4–5 are missing" in (missing_events([user(6)], 3, 6) or "")
    short = missing_events([user(4)], 3, 7) or ""
    assert "events 5–7 are missing or unreadable" in short
    assert "up to 7" in short


def test_merging_keeps_the_first_copy_of_each_seq_in_order() -> None:
    live = [user(3), user(4)]
    archived = [user(1), user(2), Event.user_message(3, content="other")]
    merged = merge_events(live, archived)
    assert [e.seq for e in merged] == [1, 2, 3, 4]
    assert merged[2].data["content"] == "m3"


def test_conditions_of_the_machine_are_storage_errors_and_wrong_files_are_not() -> None:
    for code in (errno.EACCES, errno.EPERM, errno.EMFILE, errno.ENFILE, errno.EIO, errno.EROFS):
        error = storage_error("reading x", OSError(code, "refused", "/s/state.yaml"))
        assert isinstance(error, StorageError)
        assert "/s/state.yaml" in str(error)
        assert not is_disk_full(error)
    assert is_disk_full(storage_error("appending", OSError(errno.ENOSPC, "No space left")))
    directory = OSError(errno.EISDIR, "Is a directory")
    assert storage_error("reading", directory) is directory
