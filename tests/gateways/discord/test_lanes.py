"""Each chat's events reach the kit one at a time, in the order they arrived."""

from __future__ import annotations

import asyncio

from duragent.gateways.discord.lanes import ChatLanes


async def test_a_chats_events_wait_their_turn_in_arrival_order() -> None:
    lanes = ChatLanes()
    release = asyncio.Event()
    order: list[str] = []

    async def handle(chat: str, name: str, wait: bool = False) -> None:
        async with lanes.turn(chat):
            if wait:
                await release.wait()
            order.append(name)

    first = asyncio.create_task(handle("a", "a1", wait=True))
    later = [asyncio.create_task(handle("a", f"a{i}")) for i in range(2, 6)]
    other = asyncio.create_task(handle("b", "b1"))
    await other  # another chat does not wait for a's slow first event
    assert order == ["b1"]
    release.set()
    await asyncio.gather(first, *later)
    assert order == ["b1", "a1", "a2", "a3", "a4", "a5"]


async def test_a_lane_nobody_uses_is_forgotten() -> None:
    lanes = ChatLanes()
    async with lanes.turn("a"):
        assert len(lanes) == 1
    assert len(lanes) == 0
