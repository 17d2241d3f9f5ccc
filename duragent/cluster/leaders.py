"""``run_as_leader``: a loop that must run on one node only, run while this node leads.

Telegram long polling (Telegram answers one ``getUpdates`` consumer per bot), a Discord
gateway connection (one per bot token, or every node would receive every message) and the
scheduler's loop must run once per deployment, not once per node. Each is run under a
leader lease (``LeaderLeases``, ``store.cluster``): the node that holds it runs the loop
and renews the lease every third of its length; the others check as often and start the
loop when the lease is free or expired — a dead leader's loop resumes elsewhere within the
lease plus one renewal interval.

A node that cannot renew (the database went away, or another node took the lease after this
one was paused) stops its loop at once: it cannot tell whether it still leads, and the
loops this protects are safe to stop, not to double. With files the lease is always this
node's (one node per workspace), so the loop starts at once and runs as before.

A loop that *fails* (raises: a bug, or an error it did not expect) is not a reason to stop
for good: before, its exception ended ``run_as_leader`` while the lease was still held, so the
loop was gone from every node until a restart (the others saw a live lease). Now the failure
is logged with its traceback, the lease let go, and the loop started again — here or on
another node — after a pause that doubles with each failure in a row (up to
``LONGEST_PAUSE_SECONDS``), so a loop that fails at once is not a busy loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from duragent.store.protocols import LeaderLeases

__all__ = ["run_as_leader"]

log = logging.getLogger(__name__)

LONGEST_PAUSE_SECONDS = 60.0
"""The longest wait before a failed loop is started again (module docstring)."""


async def run_as_leader(
    leaders: LeaderLeases,
    name: str,
    loop: Callable[[], Coroutine[Any, Any, None]],
    *,
    on_standby: Callable[[], None] = lambda: None,
    on_lost: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Run ``loop()`` whenever this node holds the lease ``name``, until cancelled.

    ``on_standby`` is called each time this node starts waiting for the lease (its gateway
    says so in ``/readyz``); ``on_lost`` is awaited after the loop was stopped because the
    lease was lost. Returns when ``loop`` returns by itself (it gave up, e.g. the token was
    refused), releasing the lease so another node can try.
    """
    every = max(0.05, leaders.seconds / 3)
    task: asyncio.Task[None] | None = None
    standby = False
    failures = 0
    try:
        while True:
            just_started = False
            try:
                held = await asyncio.to_thread(leaders.acquire, name)
            except OSError as exc:  # StorageError: the database cannot be asked
                log.warning("%s: cannot renew the leader lease (%s); stopping here", name, exc)
                held = False
            if held and task is None:
                log.info("%s: this node (%s) leads; starting", name, leaders.node_id)
                task = asyncio.create_task(loop(), name=f"leader-{name}")
                standby, just_started = False, True
            elif not held and task is not None:
                log.warning("%s: this node lost the leader lease; stopping", name)
                await _stop(task)
                task = None
                if on_lost is not None:
                    await on_lost()
            if not held and not standby:
                standby = True
                on_standby()
            if task is not None and task.done():
                failed = None if task.cancelled() else task.exception()
                if failed is None:
                    return  # the loop ended by itself: it gave up
                task, failures = None, failures + 1
                pause = min(every * 2**failures, LONGEST_PAUSE_SECONDS)
                log.error("%s: the loop failed; letting the lease go and starting it again in "
                          "%.1f s", name, pause, exc_info=failed)  # fmt: skip
                with contextlib.suppress(OSError):
                    await asyncio.to_thread(leaders.release, name)
                await asyncio.sleep(pause)
                continue
            if task is not None and not just_started:
                failures = 0  # it ran a whole renewal period: the count starts over
            sleep = asyncio.ensure_future(asyncio.sleep(every))
            waits: set[asyncio.Future[None]] = {sleep} if task is None else {sleep, task}
            try:  # until the next renewal, or the loop ending by itself
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleep.cancel()
    finally:
        if task is not None:
            await _stop(task)
            with contextlib.suppress(OSError):
                await asyncio.to_thread(leaders.release, name)


async def _stop(task: asyncio.Task[None]) -> None:
    """Cancel the loop and wait for it; an error it ended with meanwhile is logged."""
    task.cancel()
    await asyncio.wait([task])
    if not task.cancelled() and (failed := task.exception()) is not None:
        log.error("%s ended with an error", task.get_name(), exc_info=failed)
