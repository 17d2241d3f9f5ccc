"""The relay carries any encoded payload: the owner's receiver decodes it, the relay answers.

The chat messages are one payload (``frontkit.relayed``); here a payload of the test's own,
so what is checked is the relay and not the chat kit. The hand-over to a live owner over
HTTP is covered end to end by the gateways' cluster tests.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from duragent.cluster import OwnerRelay, Unpacked
from duragent.cluster.hops import MOVED
from duragent.store import FencedWriteError, LeaseHeldError
from duragent.store.postgres import PostgresSessionStore
from tests.store import postgres_db


class Notes:
    """A receiver of notes: ``{"to": "notes", "text": ...}``; anything else is not for it."""

    def __init__(self) -> None:
        self.recorded: list[str] = []
        self.failure: BaseException | None = None

    def unpack(self, body: bytes) -> Unpacked | None:
        data = json.loads(body)  # not JSON: ValueError
        if data.get("to") != "notes":
            return None

        async def record() -> None:
            if self.failure is not None:
                raise self.failure
            self.recorded.append(data["text"])

        return Unpacked(f"note {data['text']!r}", record)


def note(text: str, to: str = "notes") -> bytes:
    return json.dumps({"to": to, "text": text}).encode()


@pytest.fixture
async def relay() -> AsyncIterator[OwnerRelay]:
    with postgres_db.fresh_schema() as schema, postgres_db.database(schema) as db:
        store = PostgresSessionStore(db, node_id="n1", lease_seconds=0.6)
        store.open()
        relay = OwnerRelay(store.nodes, store.lease_seconds)
        try:
            yield relay
        finally:
            await relay.aclose()
            store.close()


async def test_a_payload_handed_here_is_recorded_by_the_receiver_and_answered_200(
    relay: OwnerRelay,
) -> None:
    notes = Notes()
    relay.listen(notes)
    answer = await relay.receive(note("hello"))
    assert answer == (200, {})
    assert notes.recorded == ["hello"]
    assert relay.received == 1


async def test_a_body_the_receiver_cannot_read_is_refused(relay: OwnerRelay) -> None:
    relay.listen(Notes())
    assert await relay.receive(b"not json") == (400, {})
    assert relay.received == 0


async def test_a_payload_nothing_here_takes_is_handed_again_later(relay: OwnerRelay) -> None:
    before_listening = await relay.receive(note("early"))
    relay.listen(Notes())
    not_for_it = await relay.receive(note("hello", to="elsewhere"))
    for status, headers in (before_listening, not_for_it):
        assert status == 503
        assert headers["Retry-After"] == "1"
        assert MOVED not in headers  # the session is not elsewhere: its receiver is


async def test_a_payload_whose_session_moved_on_names_the_owner_or_asks_to_look_again(
    relay: OwnerRelay,
) -> None:
    notes = Notes()
    relay.listen(notes)
    notes.failure = LeaseHeldError("s1", "n2", 5.0)
    held = await relay.receive(note("hello"))
    notes.failure = FencedWriteError("s1", held=1, current=2, owner="n2")
    fenced = await relay.receive(note("hello"))
    assert held == (503, {"Retry-After": "1", MOVED: "n2"})
    assert fenced == (503, {"Retry-After": "1", MOVED: "?"})
    assert notes.recorded == []


async def test_a_receiver_that_fails_otherwise_is_answered_500(relay: OwnerRelay) -> None:
    notes = Notes()
    relay.listen(notes)
    notes.failure = RuntimeError("a bug in the pipeline")
    assert await relay.receive(note("hello")) == (500, {})


async def test_a_payload_whose_session_this_node_holds_is_handled_here(
    relay: OwnerRelay,
) -> None:
    handled: list[str] = []

    async def handle() -> None:
        handled.append("here")

    await relay.serve("note 'hello'", note("hello"), handle)
    assert handled == ["here"]
    assert (relay.relayed, relay.taken_over) == (0, 0)


async def test_a_payload_whose_owner_is_gone_is_handled_here_once_its_lease_runs_out(
    relay: OwnerRelay,
) -> None:
    attempts: list[int] = []

    async def handle() -> None:
        attempts.append(len(attempts))
        if len(attempts) < 3:  # "gone" is registered nowhere: its lease is waited out
            raise LeaseHeldError("s1", "gone", 0.05)

    await relay.serve("note 'hello'", note("hello"), handle)
    assert len(attempts) == 3
    assert (relay.relayed, relay.taken_over) == (0, 1)
