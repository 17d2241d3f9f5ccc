"""A started tool process is reaped even when the wait for its guardian is cut short."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from pathlib import Path

import pytest

from duragent.tools import _launched
from duragent.tools._process import launch


async def test_a_guardian_whose_close_is_cancelled_is_reaped_not_left_running(
    tmp_path: Path,
) -> None:
    """The close waits for the guardian in a task; when the loop ends first (a test's loop,
    a server stopping) the task is cancelled. Before, the guardian was killed and never
    waited for: its ``Popen`` warned "still running" wherever it was collected (it failed an
    unrelated test in a CI run)."""
    started = await launch(["sleep", "30"], cwd=tmp_path)
    if not started.guarded:
        pytest.skip("no guardian on this machine (containment falls back)")
    before = set(_launched._closing)
    started.kill()  # as a cancelled run does: the lifeline cut, the guardian ends its tree
    started.close()  # the guardian still runs: the transport closes once it exits
    (closing,) = set(_launched._closing) - before
    await asyncio.sleep(0)  # the task waits for the exit now
    closing.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await closing
    popen = started.transport.get_extra_info("subprocess")
    assert isinstance(popen, subprocess.Popen)
    assert popen.returncode is not None
