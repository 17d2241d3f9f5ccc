"""Asking a pykka actor from asyncio without ever blocking the event loop.

``await pykka_future`` calls a blocking ``get()`` on the loop thread (measured: 300 ms
stalls). Instead the request carries a ``Reply`` that the actor thread resolves through the
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
from typing import Any

import pykka

from duragent.errors import DuragentError

__all__ = ["Reply", "Request", "SessionTimeoutError", "SessionUnavailableError", "ask"]


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


class Reply:
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
    """One operation for an actor: the method name, its arguments and where to answer.

    A plain slotted class (not a frozen dataclass: that costs ~1 µs more per ask); treat it
    as immutable.
    """

    __slots__ = ("kwargs", "op", "reply")

    def __init__(
        self, op: str, kwargs: Mapping[str, Any] | None = None, reply: Reply | None = None
    ) -> None:
        self.op = op
        self.kwargs: Mapping[str, Any] = kwargs if kwargs is not None else {}
        self.reply = reply

    def __repr__(self) -> str:
        return f"Request({self.op!r})"


class _Deadlines:
    """Ask timeouts for one loop with a single timer.

    Asks share a timeout, so their deadlines arrive in order: each ask appends an entry, one
    timer is armed for the oldest, and finished entries are dropped from the front. A timer
    per ask (``call_later`` + cancel) cost ~10 µs of loop time each. An ask whose deadline is
    earlier than the newest one gets its own timer (order would otherwise break).
    """

    __slots__ = ("_entries", "_loop", "_timer")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._entries: deque[list[Any]] = deque()  # [when, future | None, op, within]
        self._timer: asyncio.TimerHandle | None = None

    def watch(self, future: asyncio.Future[Any], op: str, within: float) -> list[Any] | None:
        """Fail ``future`` after ``within`` s; return a handle for ``done`` (None if own timer)."""
        when = self._loop.time() + within
        entries = self._entries
        while entries and entries[0][1] is None:
            entries.popleft()
        if entries and when < entries[-1][0]:
            own = self._loop.call_at(when, _expire, future, op, within)
            future.add_done_callback(lambda _: own.cancel())
            return None
        entry = [when, future, op, within]
        entries.append(entry)
        armed = self._timer
        if armed is None or armed.when() > when:  # none armed, or armed for a finished ask
            if armed is not None:
                armed.cancel()
            self._timer = self._loop.call_at(when, self._fire)
        return entry

    @staticmethod
    def done(entry: list[Any] | None) -> None:
        """The ask ended: forget its future (the entry is dropped when it reaches the front)."""
        if entry is not None:
            entry[1] = None

    def _fire(self) -> None:
        self._timer = None
        now = self._loop.time()
        entries = self._entries
        while entries:
            when, future, op, within = entries[0]
            if future is not None and when > now:
                self._timer = self._loop.call_at(when, self._fire)
                return
            entries.popleft()
            if future is not None:
                _expire(future, op, within)


class _LoopSide:
    """Per-loop state of the bridge: answers coming in and deadlines going out."""

    __slots__ = ("completions", "deadlines")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.completions = _Completions(loop)
        self.deadlines = _Deadlines(loop)


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


async def ask(ref: pykka.ActorRef[Any], op: str, *, within: float, **kwargs: Any) -> Any:
    """Run ``op`` on the actor and await its result without blocking the loop.

    The future is awaited directly (``asyncio.wait_for`` would add a task and extra loop hops
    to every answer); the timeout is kept by the loop's shared deadline timer.
    """
    loop = asyncio.get_running_loop()
    side = _side(loop)
    future: asyncio.Future[Any] = loop.create_future()
    try:
        ref.tell(Request(op, kwargs, Reply(side.completions, future)))
    except pykka.ActorDeadError:
        raise SessionUnavailableError(f"session actor for {op!r} is stopped") from None
    entry = side.deadlines.watch(future, op, within)
    try:
        return await future
    finally:
        _Deadlines.done(entry)


def _expire(future: asyncio.Future[Any], op: str, within: float) -> None:
    if not future.done():
        future.set_exception(
            SessionTimeoutError(f"session did not answer {op!r} within {within:g}s")
        )
