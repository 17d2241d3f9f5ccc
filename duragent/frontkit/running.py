"""Waiting for a turn without owning it: the caller may stop waiting, the turn goes on.

A front end that answers within a deadline (HTTP's ``request_timeout_seconds``, a platform's
webhook timeout) or whose caller can go away (a cancelled request) must not cancel the turn:
the user's message is on disk and its reply should be too. ``await_turn`` runs the turn as a
task and, if the waiter stops waiting before it ends, hands the task to the runtime's
``BackgroundTasks``, which logs a failure and cancels it cleanly at shutdown.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from duragent.lifecycle.tasks import BackgroundTasks

__all__ = ["await_turn"]

T = TypeVar("T")


async def await_turn(
    tasks: BackgroundTasks,
    turn: Coroutine[Any, Any, T],
    *,
    wait_at_most: float | None,
    name: str,
) -> T:
    """``turn``'s result, waiting at most ``wait_at_most`` seconds (``TimeoutError`` after).

    On a timeout, or if the waiter is cancelled, the turn keeps running under ``tasks``. A
    failure the waiter saw is raised to it and not logged again.
    """
    task = asyncio.create_task(turn, name=name)
    try:
        async with asyncio.timeout(wait_at_most):
            return await asyncio.shield(task)
    finally:
        if not task.done():  # nobody awaits it any more: the task owner keeps it
            tasks.adopt(task)
