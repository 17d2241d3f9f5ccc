"""``Lines``: each session's line in memory: one loop at a time, and what waits for a turn.

A session's ``Line`` is the one owner of its conversation's order (issue 35): it holds the
lock a turn's records are written under, the running loop's future and inbox (steering), the
decision an approval just recorded, and, for a chat, what waits for a turn of its own
(``turns.ordering``: waiting and steered messages, debounce buffers, the queue rules).
Everything that writes to a session outside a turn (a scheduled message, a note) takes the
same lock, after the running loop ended, so it never lands between a turn's records. Whoever
must wait for a loop to end, or for an approval to be decided, waits on an event here instead
of polling.

Lines live only while something holds, runs, waits or is buffered on them (``idle``): a
server runs for months, and one entry per chat ever seen would grow without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from duragent.agents.spec import QueueSpec
from duragent.session import UserMessageResult
from duragent.turns.inbox import Inbox

if TYPE_CHECKING:
    from duragent.turns.ordering import Front, PendingTurn
from duragent.turns.result import TurnResult

__all__ = ["Line", "Lines"]

KEPT_CONTEXTS = 256
"""Turn contexts kept from ``accept`` for the turn about to start (the oldest go first)."""

DECISION_BACKSTOP_SECONDS = 30.0
"""A waiter for an approval's decision looks again after this long even if nothing here said
the approval changed: a decision made by another node's runner is not seen here."""


@dataclass(slots=True)
class Line:
    """One session's turn state (see module docstring)."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    inbox: Inbox = field(default_factory=Inbox)  # the running loop's; a new one per loop
    running: asyncio.Future[TurnResult] | None = None
    decision_seq: int | None = None  # the approval ``approve`` recorded, for its caller
    users: int = 0  # calls holding this entry (``Lines.hold``)
    # --- what waits for a turn of its own (``turns.ordering``) ---
    queue: QueueSpec = field(default_factory=QueueSpec)
    front: Front | None = None
    """The front end the waiting turns are answered through (the last to submit)."""
    offer_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Messages are recorded in the order they were submitted (never waits for a model)."""
    offers: int = 0
    drain: asyncio.Task[None] | None = None
    waiting: deque[PendingTurn] = field(default_factory=deque)
    steered: list[PendingTurn] = field(default_factory=list)
    buffers: dict[str, tuple[PendingTurn, asyncio.TimerHandle]] = field(default_factory=dict)
    held_through: int = 0
    """The newest seq a waiting turn answers (queued, buffered, steered or running): a
    redelivered message at or below it already has its turn coming."""
    paused: bool | None = None
    """Whether an approval waits here, as this process last saw it (set when a turn ends and
    when a decision is recorded; None: not known, the session says): a group's next turn
    asks the session only when one may (``turns.approval_wait``)."""

    def loop_running(self) -> asyncio.Future[TurnResult] | None:
        """The running loop's future, or None when no loop runs."""
        running = self.running
        return running if running is not None and not running.done() else None

    @property
    def busy(self) -> bool:
        """A drain runs the waiting turns (a turn runs, or is due)."""
        return self.drain is not None

    def pending(self) -> int:
        """Messages waiting for an answer while the session is busy."""
        buffered = sum(len(entry.texts) for entry, _ in self.buffers.values())
        return buffered + sum(len(e.texts) for e in (*self.waiting, *self.steered))

    def idle(self) -> bool:
        """Nothing holds, runs, waits, is buffered or is being offered: it can be forgotten."""
        return not (
            self.users or self.busy or self.offers or self.waiting or self.steered or self.buffers
        )


class Lines:
    """Every session's ``Line`` while in use, and the approval-change signal."""

    __slots__ = ("_approvals", "_contexts", "_lines")

    def __init__(self) -> None:
        self._lines: dict[str, Line] = {}
        self._approvals: asyncio.Event | None = None
        self._contexts: OrderedDict[str, tuple[UserMessageResult, tuple[object, int]]] = (
            OrderedDict()
        )

    def __len__(self) -> int:
        return len(self._lines)

    def all(self) -> list[Line]:
        """Every line in memory now."""
        return list(self._lines.values())

    def line(self, session_id: str) -> Line:
        """The session's line, made if it has none (``forget_if_idle`` drops it again)."""
        line = self._lines.get(session_id)
        if line is None:
            line = self._lines[session_id] = Line()
        return line

    def forget_if_idle(self, session_id: str, line: Line) -> None:
        """Drop the line once it is idle (and still the session's)."""
        if line.idle() and self._lines.get(session_id) is line:
            del self._lines[session_id]

    @contextlib.contextmanager
    def hold(self, session_id: str) -> Iterator[Line]:
        """The session's line, dropped once no call is using it."""
        line = self.line(session_id)
        line.users += 1
        try:
            yield line
        finally:
            line.users -= 1
            self.forget_if_idle(session_id, line)

    def running(self, session_id: str) -> asyncio.Future[TurnResult] | None:
        """The session's running loop, or None."""
        line = self._lines.get(session_id)
        return line.loop_running() if line is not None else None

    def steered(self, session_id: str) -> list[str]:
        """Messages handed to the running loop that it has not read yet."""
        line = self._lines.get(session_id)
        return line.inbox.pending() if line is not None else []

    async def loop_ended(self, session_id: str) -> None:
        """Return once no loop runs for the session (at once when none does)."""
        while (running := self.running(session_id)) is not None:
            await asyncio.wait([running])  # its outcome is its caller's; never cancels it

    @contextlib.asynccontextmanager
    async def between_turns(self, session_id: str) -> AsyncIterator[Line]:
        """Hold the session's lock with no loop running: a write that is not a turn's.

        A turn that starts meanwhile waits for the lock, so the write lands before it.
        """
        with self.hold(session_id) as line:
            while True:
                await self.loop_ended(session_id)
                await line.lock.acquire()
                if line.loop_running() is None:
                    break
                line.lock.release()  # a loop claimed the line while the lock was awaited
            try:
                yield line
            finally:
                line.lock.release()

    def keep_context(
        self, session_id: str, context: UserMessageResult, stamp: tuple[object, int]
    ) -> None:
        """What a turn for the message just recorded starts from, and the writes it saw.

        A chat message recorded for an idle session is answered at once: its turn reuses
        this instead of asking the actor again, if nothing was written in between.
        """
        self._contexts.pop(session_id, None)
        self._contexts[session_id] = (context, stamp)
        while len(self._contexts) > KEPT_CONTEXTS:
            self._contexts.popitem(last=False)

    def take_context(
        self, session_id: str, seq: int
    ) -> tuple[UserMessageResult, tuple[object, int]] | None:
        """The context kept for the message ``seq`` (removed either way); None: none kept."""
        kept = self._contexts.pop(session_id, None)
        return kept if kept is not None and kept[0].seq == seq else None

    def kept_context(self, session_id: str, seq: int) -> UserMessageResult | None:
        """The context kept for the message ``seq``, left in place (None: none kept)."""
        kept = self._contexts.get(session_id)
        return kept[0] if kept is not None and kept[0].seq == seq else None

    def approvals_changed(self) -> None:
        """An approval was decided, cancelled or dropped: wake whoever waits for one."""
        event, self._approvals = self._approvals, None
        if event is not None:
            event.set()

    async def approval_change(self) -> None:
        """Return when an approval changed (or after the backstop: see its docstring)."""
        if self._approvals is None:
            self._approvals = asyncio.Event()
        event = self._approvals
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), DECISION_BACKSTOP_SECONDS)
