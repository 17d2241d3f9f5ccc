"""Asking a pykka actor from asyncio without ever blocking the event loop.

``await pykka_future`` calls a blocking ``get()`` on the loop thread (measured: 300 ms
stalls). Instead the request carries a ``ActorReply`` that the actor thread resolves through the
loop's completion queue (one ``call_soon_threadsafe`` per batch of answers; measured 43–88 µs
a round trip, no extra threads). Every ask has a timeout; a stopped actor fails the ask at once
with ``SessionUnavailableError``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections import deque
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ParamSpec, TypeVar

import pykka

from duragent.errors import DuragentError
from duragent.observability.logctx import current
from duragent.session.deadlines import Deadlines
from duragent.session.ops import Op

__all__ = [
    "ActorReply",
    "Request",
    "SessionTimeoutError",
    "SessionUnavailableError",
    "ask",
    "loop_deadlines",
]

P = ParamSpec("P")
R = TypeVar("R")

_NO_KWARGS: Mapping[str, Any] = MappingProxyType({})


class SessionUnavailableError(DuragentError):
    """The session's actor is stopped (it may be restarted from disk)."""


class SessionTimeoutError(DuragentError, TimeoutError):
    """The session's actor did not answer in time."""


class _Completions:
    """Answers from actor threads for one event loop, delivered in batches.

    ``call_soon_threadsafe`` per answer costs a handle, a self-pipe write and a loop wake-up
    each. Here an answer is appended to a deque and only the first answer of a batch schedules
    a drain; under load one wake-up delivers many answers. The lock only guards the "drain
    scheduled" flag, which the drain clears *before* it empties the deque, so no answer can be
    left behind.
    """

    __slots__ = ("_armed", "_items", "_lock", "_loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._items: deque[tuple[asyncio.Future[Any], Any, BaseException | None]] = deque()
        self._lock = threading.Lock()
        self._armed = False

    def put(self, future: asyncio.Future[Any], value: Any, exc: BaseException | None) -> None:
        self._items.append((future, value, exc))
        with self._lock:
            if self._armed:
                return
            self._armed = True
        with contextlib.suppress(RuntimeError):  # loop closed: nobody is waiting any more
            self._loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        with self._lock:
            self._armed = False
        items = self._items
        while items:
            future, value, exc = items.popleft()
            if future.done():  # timed out or cancelled meanwhile
                continue
            if exc is not None:
                future.set_exception(exc)
            else:
                future.set_result(value)


class ActorReply:
    """Resolves an asyncio future from any thread, at most once."""

    __slots__ = ("_completions", "_future")

    def __init__(self, completions: _Completions, future: asyncio.Future[Any]) -> None:
        self._completions = completions
        self._future = future

    def set_result(self, value: Any) -> None:
        """Deliver ``value`` to the waiting coroutine."""
        self._completions.put(self._future, value, None)

    def set_exception(self, exc: BaseException) -> None:
        """Deliver ``exc`` to the waiting coroutine."""
        self._completions.put(self._future, None, exc)


class Request:
    """One operation for an actor: the ``Op`` itself, its arguments and where to answer.

    The actor runs ``op.fn(actor, *args, **kwargs)``; the op's name is only for logs. Built
    by ``ask`` from a typed call (or told directly, as the launcher's ``close`` of an actor
    that failed to start). A plain slotted class (not a frozen dataclass: that costs ~1 µs
    more per ask); treat it as immutable.
    """

    __slots__ = ("args", "kwargs", "log", "op", "reply")

    def __init__(
        self,
        op: Op[Any, ..., Any],
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, Any] = _NO_KWARGS,
        reply: ActorReply | None = None,
    ) -> None:
        self.op = op
        self.args = args
        self.kwargs = kwargs
        self.reply = reply
        self.log = current()
        """The sender's log fields (``observability.logctx``): the actor logs under them."""

    def __repr__(self) -> str:
        return f"Request({self.op.name})"


class _LoopSide:
    """Per-loop state of the bridge: answers coming in and deadlines going out."""

    __slots__ = ("completions", "deadlines")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.completions = _Completions(loop)
        self.deadlines = Deadlines(loop, SessionTimeoutError)


_sides: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopSide] = (
    weakref.WeakKeyDictionary()
)


_last: tuple[asyncio.AbstractEventLoop | None, _LoopSide | None] = (None, None)


def _side(loop: asyncio.AbstractEventLoop) -> _LoopSide:
    global _last
    last_loop, last_side = _last  # almost every ask comes from the same loop
    if last_loop is loop and last_side is not None:
        return last_side
    found = _sides.get(loop)
    if found is None:
        found = _sides[loop] = _LoopSide(loop)
    _last = (loop, found)
    return found


async def ask(
    ref: pykka.ActorRef[Any],
    within: float,
    op: Op[Any, P, R],
    /,
    *args: P.args,
    **kwargs: P.kwargs,
) -> R:
    """Run ``op(*args, **kwargs)`` on the actor; await its result without blocking the loop.

    ``within`` is positional (a keyword cannot sit between an op's ``*args`` and
    ``**kwargs``). The future is awaited directly (``asyncio.wait_for`` would add a task and
    extra loop hops to every answer); the timeout is kept by the loop's shared deadline timer.
    """
    loop = asyncio.get_running_loop()
    side = _side(loop)
    future: asyncio.Future[R] = loop.create_future()
    try:
        ref.tell(Request(op, args, kwargs, ActorReply(side.completions, future)))
    except pykka.ActorDeadError:
        raise SessionUnavailableError(f"session actor for {op.name!r} is stopped") from None
    entry = side.deadlines.watch(future, within, _NO_ANSWER, op.name, within)
    try:
        return await future
    finally:
        Deadlines.done(entry)


_NO_ANSWER = "session did not answer {!r} within {:g}s"


def loop_deadlines(loop: asyncio.AbstractEventLoop) -> Deadlines:
    """The shared deadline timer of ``loop`` (failing with ``SessionTimeoutError``)."""
    return _side(loop).deadlines
