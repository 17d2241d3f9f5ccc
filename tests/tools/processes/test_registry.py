"""A spawn cancelled while its process starts still leaves a job that is watched and reported."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from duragent.core.caller import OPERATOR
from duragent.tools.processes.meta import reach_of
from tests.tools.processes.helpers import rig


@pytest.mark.parametrize("steps", [1, 2, 3, 5, 8])
async def test_a_spawn_cancelled_while_its_process_starts_is_still_reported_when_it_ends(
    tmp_path: Path, steps: int
) -> None:
    """The tool call's time limit may fall inside ``spawn``, after the job was recorded."""
    async with rig(tmp_path) as r:
        gate = tmp_path / "go"
        task = asyncio.create_task(
            r.call(action="spawn", command=f"until [ -e {gate} ]; do sleep 0.02; done", wait=True)
        )
        for _ in range(steps):  # into spawn's awaits (starting the process), then cut
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        if not r.registry.listing(reach_of("bot", OPERATOR)):
            return  # cut before the job was recorded: nothing to report
        gate.touch()
        message = await r.told.wait_ended(within=120)
    assert "Status: completed (exit 0)" in message
