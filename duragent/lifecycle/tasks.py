"""The one owner of background tasks: keeps them alive, logs their failures, ends them on stop.

asyncio keeps only a weak reference to a task, so a task nobody holds can be garbage-collected
mid-run, and a failure nobody awaits surfaces (if at all) as "Task exception was never
retrieved" at some later collection. Front ends start such tasks: a turn that goes on after
its HTTP request timed out, a stream's turn that continues after the client left, the clean-up
after a disconnect. Module-global sets used to hold them, which nothing ever cancelled on stop.

:class:`BackgroundTasks` is a service the runtime owns and injects into every front end. It
holds each task until it ends, logs a task that fails (with its name and traceback), and on
``stop`` cancels what is still running and waits for it. Tasks started while it stops (the
clean-up a cancelled task schedules, e.g. marking a session active again) run until the
grace period ends, then they are cancelled too. Once stopped, a task handed to it is
cancelled at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["BackgroundTasks"]

log = logging.getLogger(__name__)

T = TypeVar("T")

STOP_GRACE_SECONDS = 10.0


class BackgroundTasks:
    """A TaskGroup-like owner for tasks nobody awaits; a ``Service`` the runtime stops."""

    def __init__(self, *, grace_seconds: float = STOP_GRACE_SECONDS) -> None:
        """``grace_seconds``: how long ``stop`` waits for cancelled tasks and their clean-ups."""
        self._grace = grace_seconds
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stopping = False
        self._stopped = False

    def __len__(self) -> int:
        """Tasks still running."""
        return len(self._tasks)

    def spawn(self, coro: Coroutine[Any, Any, T], *, name: str) -> asyncio.Task[T]:
        """Run ``coro`` as a task this owner keeps until it ends."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self.adopt(task)
        return task

    def adopt(self, task: asyncio.Task[T]) -> None:
        """Take over a task someone else started (e.g. when its awaiter stops waiting)."""
        if task.done():
            self._report(task)
            return
        if self._stopped:
            log.warning("background task %s started after shutdown: cancelled", task.get_name())
            task.cancel()
        self._tasks.add(task)
        task.add_done_callback(self._forget)

    def _forget(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        self._report(task)

    @staticmethod
    def _report(task: asyncio.Task[Any]) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.error("background task %s failed: %s", task.get_name(), exc, exc_info=exc)

    async def start(self) -> None:
        """Nothing to start: tasks may be handed over from construction on."""

    async def stop(self) -> None:
        """Cancel every task, wait for them (and their clean-ups) up to the grace period."""
        if self._stopping:
            return
        self._stopping = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._grace
        for task in list(self._tasks):
            task.cancel()
        while self._tasks and (left := deadline - loop.time()) > 0:
            await asyncio.wait(set(self._tasks), timeout=left)
        self._stopped = True  # from here on, a task handed over is cancelled at once
        if self._tasks:  # clean-ups that outlived the grace period, or tasks refusing to end
            for task in list(self._tasks):
                task.cancel()
            await asyncio.wait(set(self._tasks), timeout=1.0)
        if self._tasks:
            names = ", ".join(sorted(t.get_name() for t in self._tasks))
            log.warning("background tasks still running after stop: %s", names)
