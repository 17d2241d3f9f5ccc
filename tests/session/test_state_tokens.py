"""A session's model tokens of the day (``tokens_per_chat_per_day``): counted once, kept.

Every recorded call's usage (replies and summaries) adds to its UTC day's total; a new day
starts from zero; the snapshot keeps the total, and events replayed over a snapshot that
already holds them are not counted twice.
"""

from __future__ import annotations

from dataclasses import replace

from duragent.core.events import Event
from duragent.core.messages import Usage
from duragent.core.snapshot import SessionSnapshot
from duragent.session.state import SessionState


def reply(seq: int, stamp: str, prompt: int, completion: int) -> Event:
    event = Event.assistant_response(
        seq,
        agent="bot",
        content="ok",
        usage=Usage(prompt_tokens=prompt, completion_tokens=completion),
    )
    return replace(event, timestamp=stamp)


def fresh() -> SessionState:
    return SessionState(
        SessionSnapshot(session_id="s", agent="bot", created_at="x", updated_at="x")
    )


def test_calls_add_to_their_days_total_and_a_new_day_starts_from_zero() -> None:
    state = fresh()
    state.apply(reply(1, "2026-01-01T10:00:00.000Z", 60, 40))
    state.apply(reply(2, "2026-01-01T23:59:59.000Z", 5, 5))
    assert (state.tokens_day, state.tokens_today) == ("2026-01-01", 110)
    state.apply(reply(3, "2026-01-02T00:00:01.000Z", 1, 2))
    assert (state.tokens_day, state.tokens_today) == ("2026-01-02", 3)


def test_the_snapshot_keeps_the_total_and_a_replay_does_not_count_twice() -> None:
    state = fresh()
    events = [reply(n, "2026-01-01T10:00:00.000Z", 10, 10) for n in range(1, 4)]
    for event in events:
        state.apply(event)
    snapshot = SessionSnapshot.from_dict(state.to_snapshot("now").to_dict())
    assert (snapshot.tokens_day, snapshot.tokens_today) == ("2026-01-01", 60)
    recovered = SessionState(snapshot)
    for event in events:  # replayed from the checkpoint: already in the snapshot
        recovered.apply(event)
    recovered.apply(reply(4, "2026-01-01T11:00:00.000Z", 10, 10))
    assert recovered.tokens_today == 80
