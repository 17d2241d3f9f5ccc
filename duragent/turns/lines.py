"""``Lines``: each session's turn state in memory: one loop at a time, and who waits for it.

A session's ``Line`` holds the lock a turn's records are written under, the running loop's
future and inbox (steering), and the decision an approval just recorded. Everything that
writes to a session outside a turn (a scheduled message, a note) takes the same lock, after
the running loop ended, so it never lands between a turn's records (issue 35). Whoever must
wait for a loop to end, or for an approval to be decided, waits on an event here instead of
polling.

Entries live only while some call holds them (``hold``): a server runs for months, and one
entry per chat ever seen would grow without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

from duragent.session import UserMessageResult
from duragent.turns.inbox import Inbox
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

    def loop_running(self) -> asyncio.Future[TurnResult] | None:
        """The running loop's future, or None when no loop runs."""
        running = self.running
        return running if running is not None and not running.done() else None


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

    @contextlib.contextmanager
    def hold(self, session_id: str) -> Iterator[Line]:
        """The session's line, dropped once no call is using it."""
        line = self._lines.get(session_id)
        if line is None:
            line = self._lines[session_id] = Line()
        line.users += 1
        try:
            yield line
        finally:
            line.users -= 1
            if not line.users and self._lines.get(session_id) is line:
                del self._lines[session_id]

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
