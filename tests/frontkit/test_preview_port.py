"""``PreviewBudget`` and ``preview_port_of``: a gateway's streamed replies share one pace."""

from __future__ import annotations

import asyncio
from pathlib import Path

from duragent.frontkit.memory import MemoryOutbound
from duragent.frontkit.outbound import MeteredOutbound
from duragent.frontkit.preview_port import PreviewBudget, preview_port_of
from duragent.frontkit.preview_store import PreviewStore
from duragent.observability.metrics import Metrics
from tests.frontkit.test_preview import MemoryPreviews


async def test_first_previews_go_before_edits_that_waited_longer() -> None:
    budget = PreviewBudget(per_second=50)
    order: list[str] = []

    async def edit(name: str) -> None:
        await budget.turn()
        order.append(name)

    async def first(name: str) -> None:
        assert await budget.opening(within=60)
        order.append(name)

    await edit("opening")  # takes the free slot: the others wait
    waiting = [asyncio.create_task(edit("edit-1")), asyncio.create_task(edit("edit-2"))]
    await asyncio.sleep(0)  # the edits queue up first
    waiting.append(asyncio.create_task(first("first")))
    await asyncio.gather(*waiting)
    assert order == ["opening", "first", "edit-1", "edit-2"]


async def test_final_texts_take_their_slots_before_waiting_previews() -> None:
    budget = PreviewBudget(per_second=10)
    await budget.turn()
    edit = asyncio.create_task(budget.turn())
    await asyncio.sleep(0)
    for _ in range(3):
        budget.charge()  # three final texts went out meanwhile
    assert not await budget.opening(within=0.25)  # would come after them: not now
    await edit
    assert await budget.opening(within=60)


async def test_a_first_preview_that_would_come_late_is_not_sent() -> None:
    budget = PreviewBudget(per_second=1)
    assert await budget.opening(within=0.5)  # the free slot
    assert not await budget.opening(within=0.5)  # the next is a second away


async def test_a_caller_cancelled_while_waiting_gives_its_place_to_the_next() -> None:
    budget = PreviewBudget(per_second=50)
    await budget.turn()
    gone = asyncio.create_task(budget.opening(within=60))
    kept = asyncio.create_task(budget.turn())
    await asyncio.sleep(0)
    gone.cancel()
    await kept
    assert gone.cancelled()
    assert budget.waiting() == 0


def test_the_preview_port_is_found_under_the_metrics_wrapper(tmp_path: Path) -> None:
    port = MemoryPreviews(PreviewStore(tmp_path))
    wrapped = MeteredOutbound(port, "memory", Metrics())  # type: ignore[arg-type]  # a port part
    assert preview_port_of(wrapped) is port
    assert preview_port_of(MemoryOutbound()) is None
