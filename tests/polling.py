"""Waiting for background work without assuming how long it takes.

A fixed ``sleep`` before an assertion is a guess about the machine: on a loaded CI host an
eviction, a reaper pass or a streamed pause can take longer than any guess. ``eventually``
polls the condition until it holds or a generous deadline passes (60 s: it only runs out when
the test fails, so a long one costs a passing run nothing); the assertion that follows is
unchanged.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


async def eventually(
    condition: Callable[[], bool | Awaitable[bool]], *, within: float = 60.0
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
