"""``Ticket``: a waited submission's turn, owned by its waiter or outliving it."""

from __future__ import annotations

import asyncio

import pytest

from duragent.lifecycle.tasks import BackgroundTasks
from duragent.turns.result import Complete, TurnResult
from duragent.turns.tickets import Ticket, Waited


async def turn(gate: asyncio.Event, done: list[str]) -> TurnResult:
    await gate.wait()
    done.append("finished")
    return Complete(session_id="s", content="reply")


async def test_a_turn_that_ends_in_time_is_the_waiters_result() -> None:
    tasks = BackgroundTasks()
    gate, done = asyncio.Event(), list[str]()
    gate.set()
    ticket = Ticket(turn(gate, done), Waited(tasks))
    result = await ticket.result(wait_at_most=5)
    assert isinstance(result, Complete)
    assert result.content == "reply"
    assert len(tasks) == 0


async def test_a_turn_past_the_wait_goes_on_under_the_front_ends_tasks() -> None:
    tasks = BackgroundTasks()
    gate, done = asyncio.Event(), list[str]()
    ticket = Ticket(turn(gate, done), Waited(tasks))
    with pytest.raises(TimeoutError):
        await ticket.result(wait_at_most=0.05)
    assert len(tasks) == 1
    gate.set()
    await ticket  # joining it late: the same turn, finished under the owner
    assert done == ["finished"]
    await asyncio.sleep(0)
    assert len(tasks) == 0


async def test_a_cancelled_waiter_of_the_result_leaves_the_turn_running_until_stop() -> None:
    tasks = BackgroundTasks(grace_seconds=1)
    gate, done = asyncio.Event(), list[str]()
    ticket = Ticket(turn(gate, done), Waited(tasks))
    waiter = asyncio.create_task(ticket.result())
    await asyncio.sleep(0.05)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert not ticket.done()
    assert len(tasks) == 1
    await tasks.stop()  # cancels the turn: it never finished
    assert done == []
    assert len(tasks) == 0


async def test_a_waiter_that_owns_the_ticket_stops_the_turn_when_cancelled() -> None:
    gate, done = asyncio.Event(), list[str]()
    ticket = Ticket(turn(gate, done), Waited())

    async def owner() -> TurnResult:
        return await ticket

    waiter = asyncio.create_task(owner())
    await asyncio.sleep(0.05)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert ticket.done()
    gate.set()
    await asyncio.sleep(0.01)
    assert done == []


async def test_a_result_waiter_with_no_owner_to_hand_over_to_ends_the_turn() -> None:
    gate, done = asyncio.Event(), list[str]()
    ticket = Ticket(turn(gate, done), Waited())
    with pytest.raises(TimeoutError):
        await ticket.result(wait_at_most=0.05)
    await asyncio.sleep(0)
    assert ticket.done()
    gate.set()
    await asyncio.sleep(0.01)
    assert done == []
