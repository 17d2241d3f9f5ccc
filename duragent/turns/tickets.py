"""How a front end hands its session's line a message: ``TurnRunner.submit`` and its ``Ticket``.

Every front end submits through the one method (issue 35), and says how it waits:

- ``Queued`` (a chat: Telegram, Discord, an external gateway): the message is recorded at
  once, in arrival order, and the line's queue rules give it a turn (``turns.ordering``); the
  reply is delivered through the chat's ``Front``. ``submit`` returns once the message is on
  disk: the platform's update is confirmed without waiting for a model.
- ``Waited`` (an HTTP request, the OpenAI endpoint, a script): the submitter waits for the
  turn's outcome. The message is recorded and steered into the session's running loop, or
  starts a turn of its own at once (``turns.steering``: the one steering rule). ``submit``
  returns a ``Ticket`` at once; the turn runs as its own task.

A ``Ticket`` is that task and the two ways to wait for it, because two behaviours users rely
on differ in who owns the turn:

- ``await ticket``: the waiter owns the turn. Cancelling the waiter cancels the turn (an SSE
  stream's ``on_disconnect: pause`` and a stopping server stop a turn so: its partial reply
  kept, the call it cut recorded as cut).
- ``await ticket.result(wait_at_most=…)``: the turn outlives the waiter. A plain request that
  times out, or whose client left, stops waiting; the turn goes on under the front end's
  ``BackgroundTasks`` (which logs its failure and cancels it at shutdown), because the
  person's message is on disk and its reply should be too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from duragent.agents.spec import QueueSpec
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.turns.result import TurnResult
from duragent.turns.sink import TurnSink

if TYPE_CHECKING:
    from duragent.turns.ordering import Front

__all__ = ["Queued", "Ticket", "Waited"]


@dataclass(frozen=True, slots=True)
class Queued:
    """A chat's message: answered by the line's queue rules, through ``front``."""

    queue: QueueSpec
    front: Front


@dataclass(frozen=True, slots=True)
class Waited:
    """The submitter waits for the turn (see module docstring).

    ``tasks`` takes the turn over when nobody waits for it any more (None: a waiter that
    stops waiting cancels it). ``sink`` hears the turn's progress (a stream).
    """

    tasks: BackgroundTasks | None = None
    sink: TurnSink | None = None
    name: str = "turn"


class Ticket:
    """A waited submission's turn (see module docstring)."""

    __slots__ = ("_task", "_tasks")

    def __init__(self, turn: Coroutine[Any, Any, TurnResult], how: Waited) -> None:
        self._task: asyncio.Task[TurnResult] = asyncio.create_task(turn, name=how.name)
        self._tasks = how.tasks

    def __await__(self) -> Generator[Any, None, TurnResult]:
        """The outcome; the waiter owns the turn (cancelling the waiter cancels it)."""
        return self._task.__await__()

    async def result(self, *, wait_at_most: float | None = None) -> TurnResult:
        """The outcome, waiting at most ``wait_at_most`` seconds (``TimeoutError`` after).

        On a timeout, or if the waiter is cancelled, the turn goes on under ``Waited.tasks``
        (never cancelled by the waiter). A failure the waiter saw is raised to it and not
        logged again.
        """
        try:
            async with asyncio.timeout(wait_at_most):
                return await asyncio.shield(self._task)
        finally:
            self._hand_over()

    def done(self) -> bool:
        """Whether the turn has ended."""
        return self._task.done()

    def cancel(self) -> None:
        """Stop the turn (as a cancelled owner would)."""
        self._task.cancel()

    def _hand_over(self) -> None:
        if self._task.done():
            return
        if self._tasks is not None:
            self._tasks.adopt(self._task)  # nobody awaits it any more: the owner keeps it
        else:
            self._task.cancel()  # no owner to keep it: it ends with its waiter
