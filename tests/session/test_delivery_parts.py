"""A reply delivered part by part: each part's record is kept, replayed, and written once.

``SessionState`` keeps the partial progress of the reply being delivered (``delivering_seq``,
``delivered_parts``) beside ``last_delivered_seq``, from the events and from the snapshot;
``record_delivery`` writes a part's record only when it says something new.
"""

from __future__ import annotations

import json
from pathlib import Path

from duragent.core.events import Event, EventType
from duragent.core.snapshot import SessionSnapshot
from duragent.session import NewSession, RegistrySettings, SessionRegistry
from duragent.session.state import SessionState
from duragent.store import SessionStore


def fresh() -> SessionState:
    return SessionState(SessionSnapshot(session_id="s", agent="a", created_at="t", updated_at="t"))


def delivered(state: SessionState, seq: int, reply_seq: int, parts: int | None = None) -> None:
    state.apply(Event.delivery(seq, reply_seq=reply_seq, target="telegram:1", parts=parts))


def test_a_part_delivered_is_kept_and_the_whole_delivery_clears_it() -> None:
    state = fresh()
    delivered(state, 1, 7, parts=1)
    assert (state.last_delivered_seq, state.delivering_seq, state.delivered_parts) == (0, 7, 1)
    delivered(state, 2, 7, parts=2)
    assert (state.delivering_seq, state.delivered_parts) == (7, 2)
    delivered(state, 3, 7)
    assert (state.last_delivered_seq, state.delivering_seq, state.delivered_parts) == (7, 0, 0)


def test_an_older_or_equal_part_changes_nothing_and_is_no_news() -> None:
    state = fresh()
    delivered(state, 1, 7, parts=2)
    assert not state.delivery_news(7, 2)
    assert not state.delivery_news(7, 1)
    assert not state.delivery_news(5, 3)  # an older reply than the one part-way
    delivered(state, 2, 7, parts=1)  # replayed or late: the progress stays
    assert (state.delivering_seq, state.delivered_parts) == (7, 2)
    assert state.delivery_news(7, 3)
    assert state.delivery_news(7, None)
    assert state.delivery_news(9, 1)


def test_parts_of_a_reply_delivered_whole_already_are_no_news() -> None:
    state = fresh()
    delivered(state, 1, 7)
    assert not state.delivery_news(7, 1)
    assert not state.delivery_news(7, None)
    delivered(state, 2, 7, parts=1)
    assert (state.last_delivered_seq, state.delivering_seq, state.delivered_parts) == (7, 0, 0)


def test_the_snapshot_keeps_a_reply_part_way_and_a_replay_over_it_keeps_it() -> None:
    state = fresh()
    event = Event.delivery(1, reply_seq=7, target="telegram:1", parts=2)
    state.apply(event)
    snapshot = state.to_snapshot("t")
    written = snapshot.to_dict()
    assert written["delivering"] == {"seq": 7, "parts": 2}
    again = SessionState(SessionSnapshot.from_dict(json.loads(json.dumps(written))))
    again.apply(event)  # the event replayed over the snapshot that holds it
    assert (again.delivering_seq, again.delivered_parts) == (7, 2)


def test_a_snapshot_with_nothing_part_way_is_written_as_before() -> None:
    state = fresh()
    delivered(state, 1, 7, parts=1)
    delivered(state, 2, 7)
    assert "delivering" not in state.to_snapshot("t").to_dict()
    assert "delivering" not in fresh().to_snapshot("t").to_dict()


async def open_registry(root: Path) -> SessionRegistry:
    registry = SessionRegistry(SessionStore(root), RegistrySettings(ask_timeout=10))
    await registry.open()
    return registry


def delivery_lines(root: Path, sid: str) -> list[dict[str, object]]:
    lines = (root / sid / "events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    return [e for e in events if e["type"] == EventType.DELIVERY]


async def test_a_part_recorded_is_read_back_after_a_restart_and_written_once(
    tmp_path: Path,
) -> None:
    registry = await open_registry(tmp_path)
    try:
        sid = await registry.create(NewSession(agent="a", gateway="telegram", gateway_chat_id="9"))
        session = registry.handle(sid)
        await session.add_user_message("hi")
        reply = await session.add_assistant_response("hello", durable=True)
        assert await session.record_delivery(reply, "telegram:9", parts=1) is not None
        assert await session.record_delivery(reply, "telegram:9", parts=1) is None
        assert await session.record_delivery(reply, "telegram:9", parts=2) is not None
        assert await session.record_delivery(reply, "telegram:9", parts=1) is None
    finally:
        await registry.aclose()
    registry = await open_registry(tmp_path)
    try:
        info = await registry.info(sid)
    finally:
        await registry.aclose()
    assert [(e["reply_seq"], e.get("parts")) for e in delivery_lines(tmp_path, sid)] == [
        (reply, 1),
        (reply, 2),
    ]
    assert (info.last_delivered_seq, info.delivering_seq, info.delivered_parts) == (0, reply, 2)
    assert info.parts_delivered(reply) == 2
    assert info.parts_delivered(reply + 1) == 0


async def test_the_whole_delivery_after_its_parts_is_written_as_before_and_ends_them(
    tmp_path: Path,
) -> None:
    registry = await open_registry(tmp_path)
    try:
        sid = await registry.create(NewSession(agent="a", gateway="telegram", gateway_chat_id="9"))
        session = registry.handle(sid)
        await session.add_user_message("hi")
        reply = await session.add_assistant_response("hello", durable=True)
        await session.record_delivery(reply, "telegram:9", parts=1)
        assert await session.record_delivery(reply, "telegram:9") is not None
        assert await session.record_delivery(reply, "telegram:9", parts=2) is None
        assert await session.record_delivery(reply, "telegram:9") is None
        await session.snapshot()
    finally:
        await registry.aclose()
    registry = await open_registry(tmp_path)
    try:
        info = await registry.info(sid)
    finally:
        await registry.aclose()
    whole = delivery_lines(tmp_path, sid)[-1]
    assert {k: whole[k] for k in whole if k not in ("seq", "timestamp", "type")} == {
        "reply_seq": reply,
        "target": "telegram:9",
    }
    assert len(delivery_lines(tmp_path, sid)) == 2
    assert (info.last_delivered_seq, info.delivering_seq, info.delivered_parts) == (reply, 0, 0)
    assert info.parts_delivered(reply) is None
