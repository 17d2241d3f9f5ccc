"""Do the log and the snapshot agree? Which events that must exist cannot be found?

Every event up to a snapshot's ``last_event_seq`` was written (and fsync'd) before the
snapshot was, and a rollover only removes events up to ``checkpoint_seq``. So on load the
live log must hold every seq from ``checkpoint_seq + 1`` to at least ``last_event_seq``, with
no hole. A missing or garbage ``events.jsonl``, a hole in the middle, or a log starting past
where it should are therefore *lost acknowledged data*, never a normal state: recovery first
looks for the events in the archive and otherwise refuses to resume (quarantine).

What stays normal: a torn last line (a crash mid-append: never acknowledged), a torn line in
the middle followed by the same seq written again (the append after that crash), duplicates
(a failed roll-back), and events beyond ``last_event_seq`` (written after the snapshot).
"""

from __future__ import annotations

from collections.abc import Iterable

from duragent.core.events import Event

__all__ = ["merge_events", "missing_events"]


def missing_events(events: list[Event], after_seq: int, expected_last: int) -> str | None:
    """Why ``events`` (sorted, de-duplicated, all ``> after_seq``) are incomplete, or None.

    Complete means: seqs ``after_seq + 1, after_seq + 2, …`` with no hole, reaching at least
    ``expected_last``.
    """
    last = after_seq
    for event in events:
        if event.seq != last + 1:
            return f"events {_span(last + 1, event.seq - 1)} are missing (the log has a hole)"
        last = event.seq
    if last < expected_last:
        return (
            f"events {_span(last + 1, expected_last)} are missing or unreadable "
            f"(state.yaml says events up to {expected_last} were written)"
        )
    return None


def merge_events(*sources: Iterable[Event]) -> list[Event]:
    """The events of all ``sources`` by seq, the first copy of each seq kept."""
    by_seq: dict[int, Event] = {}
    for source in sources:
        for event in source:
            by_seq.setdefault(event.seq, event)
    return [by_seq[seq] for seq in sorted(by_seq)]


def _span(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}–{last}"
