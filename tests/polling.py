"""Waiting for background work without assuming how long it takes.

A fixed ``sleep`` before an assertion is a guess about the machine: on a loaded CI host an
eviction, a reaper pass or a streamed pause can take longer than any guess. ``eventually``
polls the condition until it holds or a generous deadline passes (``PATIENCE``: it only runs
out when the test fails, so a long one costs a passing run nothing); the assertion that
follows is unchanged. ``until_ready`` is the same wait for a served process's health check.

A wait that asserts something does *not* happen is the other kind: it costs every passing
run its length, so it stays short and names its own ``within``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import httpx

PATIENCE = 120.0
"""How long a test waits for something that will happen (a start, a reply, a file): a
2-core machine busy with two other processes took more than 30 s to start a server."""


async def eventually(
    condition: Callable[[], bool | Awaitable[bool]], *, within: float = PATIENCE
) -> bool:
    """Whether ``condition()`` (sync or async) became true within ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        result = condition()
        if not isinstance(result, bool):
            result = await result
        if result or time.monotonic() >= deadline:
            return result
        await asyncio.sleep(0.02)


async def until_ready(
    url: str,
    *,
    path: str = "/readyz",
    alive: Callable[[], bool] = lambda: True,
    within: float = PATIENCE,
) -> None:
    """Return once ``url + path`` answers 200; AssertionError when ``alive()`` turns false
    (the process exited) or ``within`` seconds pass first."""
    deadline = time.monotonic() + within
    async with httpx.AsyncClient(timeout=10) as client:  # one probe; retried until deadline
        while time.monotonic() < deadline:
            assert alive(), f"{url} exited before it was ready"
            try:
                if (await client.get(f"{url}{path}")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.05)
    raise AssertionError(f"{url} was not ready within {within:.0f} s")
