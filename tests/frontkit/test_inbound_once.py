"""``GatewayChats`` takes each platform message once across nodes (its inbound ledger).

Two nodes are two ``GatewayChats`` over one ``MemoryCluster`` (the PostgreSQL ledger passes
the same contract: ``tests/store/test_cluster_contract.py``); the pipeline behind each is a
recorder that can be made to fail or to wait, so the claim's life can be watched.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from duragent.errors import StorageError
from duragent.frontkit import ButtonPress, GatewayChats, InboundBusyError, InboundMessage, Sender
from duragent.store import LeaseHeldError
from duragent.store.cluster import MemoryCluster


class Pipeline:
    """Stands in for ``ChatFront``: records what reached it; may fail or wait once."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.presses: list[str] = []
        self.fail_next = False
        self.hold: asyncio.Event | None = None
        self.held_by: str | None = None
        """Another node keeps the chat's session alive: every attempt meets its lease."""

    async def message(self, msg: InboundMessage) -> None:
        if self.held_by is not None:
            raise LeaseHeldError("session_1", self.held_by, 0.05)
        if self.hold is not None:
            await self.hold.wait()
        if self.fail_next:
            self.fail_next = False
            raise StorageError("recording a message", OSError(28, "No space left on device"))
        self.messages.append(msg.message_id)

    async def press(self, press: ButtonPress) -> None:
        self.presses.append(press.callback_id)


def node(
    shared: MemoryCluster, name: str, *, fans_out: bool = False
) -> tuple[GatewayChats, Pipeline]:
    pipeline = Pipeline()
    none: Any = None  # queues, turns and catalog are not reached by ``message``/``press``
    cluster = shared.node(name)
    chats = GatewayChats("telegram", pipeline, none, none, none, cluster=cluster, fans_out=fans_out)  # type: ignore[arg-type]
    return chats, pipeline


def message(message_id: str) -> InboundMessage:
    return InboundMessage("telegram", "42", "dm", message_id, Sender("42"), "hi")


async def test_the_same_message_on_two_nodes_reaches_one_pipeline() -> None:
    shared = MemoryCluster()
    (a, seen_a), (b, seen_b) = node(shared, "a"), node(shared, "b")
    await a.message(message("7"))
    await b.message(message("7"))  # redelivered to the other node: a duplicate
    await a.message(message("8"))
    assert seen_a.messages == ["7", "8"]
    assert seen_b.messages == []


async def test_a_message_another_node_is_recording_is_refused_for_a_retry() -> None:
    shared = MemoryCluster()
    (a, seen_a), (b, _) = node(shared, "a"), node(shared, "b")
    seen_a.hold = asyncio.Event()
    recording = asyncio.create_task(a.message(message("7")))
    await asyncio.sleep(0)  # a has claimed it and is recording it
    with pytest.raises(InboundBusyError):
        await b.message(message("7"))
    seen_a.hold.set()
    await recording
    await b.message(message("7"))  # Telegram's retry: now a duplicate, quietly
    assert seen_a.messages == ["7"]


async def test_a_message_that_could_not_be_recorded_is_taken_by_the_next_delivery() -> None:
    shared = MemoryCluster()
    (a, seen_a), (b, seen_b) = node(shared, "a"), node(shared, "b")
    seen_a.fail_next = True
    with pytest.raises(StorageError):
        await a.message(message("7"))
    await b.message(message("7"))  # the redelivery, on another node, at once
    assert seen_a.messages == []
    assert seen_b.messages == ["7"]


async def test_a_button_press_on_two_nodes_is_acted_on_once() -> None:
    shared = MemoryCluster()
    (a, seen_a), (b, seen_b) = node(shared, "a"), node(shared, "b")
    press = ButtonPress("telegram", "42", "cb-1", Sender("42"), "9", "approve:allow_once")
    await a.press(press)
    await b.press(press)
    assert seen_a.presses + seen_b.presses == ["cb-1"]


async def test_on_a_platform_that_never_redelivers_a_busy_message_is_taken_when_let_go() -> None:
    """Discord sends each node its copy once: giving up on a busy claim could lose it."""
    shared = MemoryCluster()
    (a, seen_a), (b, seen_b) = node(shared, "a", fans_out=True), node(shared, "b", fans_out=True)
    seen_a.hold, seen_a.fail_next = asyncio.Event(), True
    failing = asyncio.create_task(a.message(message("7")))
    await asyncio.sleep(0)  # a has claimed it and is recording it
    waiting = asyncio.create_task(b.message(message("7")))
    await asyncio.sleep(0.3)
    assert not waiting.done()  # b waits for a's claim, rather than dropping its copy
    seen_a.hold.set()
    with pytest.raises(StorageError):
        await failing  # a could not take it in: its claim is let go
    await waiting
    assert seen_a.messages == []
    assert seen_b.messages == ["7"]


async def test_on_a_platform_that_never_redelivers_a_busy_message_recorded_is_a_duplicate() -> None:
    shared = MemoryCluster()
    (a, seen_a), (b, seen_b) = node(shared, "a", fans_out=True), node(shared, "b", fans_out=True)
    seen_a.hold = asyncio.Event()
    recording = asyncio.create_task(a.message(message("7")))
    await asyncio.sleep(0)
    waiting = asyncio.create_task(b.message(message("7")))
    await asyncio.sleep(0.3)
    seen_a.hold.set()
    await recording
    await waiting  # quietly: a recorded it
    assert seen_a.messages == ["7"]
    assert seen_b.messages == []


async def test_on_a_platform_that_fans_out_a_message_whose_session_lives_on_is_left_to_its_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """b claimed the message, but a keeps the chat's session alive past b's wait: b lets the
    claim go for a's own copy (not a loss, not an ERROR), and ends quietly once a took it."""
    monkeypatch.setattr("duragent.frontkit.owners.EXTRA_SECONDS", 0.1)
    monkeypatch.setattr("duragent.frontkit.owners.WATCH_SECONDS", 0.05)
    shared = MemoryCluster(lease_seconds=0.2)
    (a, seen_a), (b, seen_b) = node(shared, "a", fans_out=True), node(shared, "b", fans_out=True)
    seen_b.held_by = "a"
    watching = asyncio.create_task(b.message(message("7")))
    await asyncio.sleep(0.5)  # b claimed, waited out a's lease, and let go
    await a.message(message("7"))  # a's own copy: first, now b let go
    await watching  # a duplicate for b: quietly
    assert seen_a.messages == ["7"]
    assert seen_b.messages == []


async def test_on_a_platform_that_fans_out_a_message_left_to_an_owner_that_dies_is_taken_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The owner kept the session past b's wait and died before it took its copy: b, which
    let the message go for it, takes it over once the owner's lease is gone."""
    monkeypatch.setattr("duragent.frontkit.owners.EXTRA_SECONDS", 0.1)
    monkeypatch.setattr("duragent.frontkit.owners.WATCH_SECONDS", 0.05)
    shared = MemoryCluster(lease_seconds=0.2)
    b, seen_b = node(shared, "b", fans_out=True)
    seen_b.held_by = "a"
    watching = asyncio.create_task(b.message(message("7")))
    await asyncio.sleep(0.6)  # past b's wait: left to a, watched
    assert not watching.done()
    seen_b.held_by = None  # a died: its lease ran out
    await watching
    assert seen_b.messages == ["7"]
