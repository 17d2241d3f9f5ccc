"""``SessionQueues``: a chat's messages accepted at once, answered one turn at a time.

A chat platform wants each update confirmed quickly, and a person may write three messages
while the model still answers the first. ``offer`` is what the chat pipeline calls for each
message, in arrival order; it returns once the message is **durably recorded** (or
deliberately dropped or rejected, before anything is recorded) and never waits for a model.
The turns run later, one at a time per session, as tasks of the runtime's
``BackgroundTasks``, and their replies go out through ``ChatTurns.answer`` and ``Delivery``
(each reply once, as a reply to the message that started the turn).

What happens to a message (``QueueSpec`` of the agent's access block):

- **Idle session**: recorded, its turn starts at once (also with debounce on: the first
  message of an idle session is never delayed).
- **Busy session** (a turn runs or is due), by ``mode``:
  - ``batch``: recorded and handed to the running loop (``TurnRunner.accept`` steers it, as
    HTTP does), which answers it in the same reply; whatever that loop did not get to (it
    had already finished, or failed before it) is answered by one more turn, together.
  - ``sequential``: recorded, not steered: after the running turn, each message gets a turn
    and a reply of its own, in order. Its turn is run with ``TurnRunner.answer``, which shows
    the model the message again at the end of the conversation when replies were written
    after it (the history on disk keeps the arrival order).
  - ``drop``: not recorded, not answered; logged. Dropping happens *before* accepting:
    nothing accepted is lost.
- **Full** (``max_pending`` messages already wait, steered ones included), by ``overflow``:
  ``drop_new`` drops the new message (not recorded, logged); ``reject`` does the same and
  answers it with ``reject_message`` when one is set; ``drop_old`` records the new message
  and the oldest waiting one gives up its own turn (it stays in the history, where the next
  turn's model sees it; a message already handed to a running loop is never taken back).
- **Debounce** (per sender, ``window_ms``): while a session is busy, a sender's messages are
  buffered (each recorded at once) and, once the sender is quiet for the window, join the
  waiting line as one entry: one turn, the texts joined by newlines. A buffer that flushes
  after the session went idle starts its turn at once (the reference left it waiting for
  the next message).

Never wedged: whatever a turn does — a reply, a failure, a timeout (``turn_timeout``), an
exception, a cancellation — the session's line moves on or is released; a message arriving
after a cancelled drain starts a new one (the reference stayed "busy" forever when its
handler was cancelled). A turn that times out or raises gets a short apology in the chat,
recorded as the turn's failed end (an ``error`` event: a restart does not answer it again).
A reply that exists is never apologised for: while the platform refuses it for a while, the
gateway's ``Outbox`` waits it out and the session's next turn waits behind it (its messages
are recorded meanwhile, as always; ``turn_timeout`` bounds the turn, not the delivery); one
given up or refused outright is ``UndeliveredError``, told once (``UNDELIVERED``), and the
person is not invited to ask again.

Memory is bounded by active chats: a session's entry is removed as soon as nothing runs,
waits, is buffered or is being offered for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from duragent.agents.spec import ContextBufferSpec, QueueSpec
from duragent.frontkit.chat import ChatTurns, Inbound
from duragent.frontkit.outbound import ChatRef, OutboundPort
from duragent.frontkit.outbox import UNDELIVERED, UndeliveredError
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.turns import Steered, TurnRunner

__all__ = ["TURN_FAILED", "Dispatcher", "SessionQueues"]

log = logging.getLogger(__name__)

TURN_FAILED = "Sorry, I could not answer that. Your message is saved; you can send it again."
"""Sent when a turn times out or fails outside the model (the model's own failures are
answered by the runner's ``Failed`` sentence)."""


class Dispatcher(Protocol):
    """What the chat pipeline (``ChatFront``) hands an accepted message to (``SessionQueues``)."""

    async def offer(self, session_id: str, inbound: Inbound, queue: QueueSpec) -> None:
        """Accept ``inbound`` for its session: recorded durably before returning."""
        ...


@dataclass(slots=True)
class _PendingTurn:
    """Recorded messages answered by one turn (one reply, to the first of them)."""

    chat: ChatRef
    first: int
    """The first message's seq (entries are ordered by it)."""
    seq: int
    """The last message's seq: the turn answers everything recorded up to it."""
    texts: list[str]
    reply_to: str | None
    """The first message's platform id."""
    sender_id: str | None = None
    """The first message's sender: the requester of an approval the turn asks for."""
    context_buffer: ContextBufferSpec | None = None
    """Set when a message of the entry triggered a group turn: its context block is shown."""
    tickets: list[Steered] = field(default_factory=list)
    """Steered into a running loop: whether that loop read each message."""

    @classmethod
    def of(
        cls,
        chat: ChatRef,
        seq: int,
        text: str,
        reply_to: str | None,
        sender_id: str | None = None,
        context_buffer: ContextBufferSpec | None = None,
    ) -> _PendingTurn:
        return cls(chat, seq, seq, [text], reply_to, sender_id, context_buffer)

    def absorb(self, later: _PendingTurn) -> None:
        self.texts.extend(later.texts)
        self.tickets.extend(later.tickets)
        self.seq = max(self.seq, later.seq)
        self.context_buffer = self.context_buffer or later.context_buffer


def _merged(entries: Iterable[_PendingTurn]) -> _PendingTurn | None:
    """One entry answering ``entries`` together, in arrival order (None: nothing)."""
    ordered = sorted(entries, key=lambda e: e.first)
    if not ordered:
        return None
    head = ordered[0]
    merged = _PendingTurn(
        head.chat,
        head.first,
        head.seq,
        list(head.texts),
        head.reply_to,
        head.sender_id,
        head.context_buffer,
        list(head.tickets),
    )
    for entry in ordered[1:]:
        merged.absorb(entry)
    return merged


@dataclass(slots=True)
class _Line:
    """One session's queue: what runs, waits and is buffered."""

    spec: QueueSpec
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    offers: int = 0
    drain: asyncio.Task[None] | None = None
    waiting: deque[_PendingTurn] = field(default_factory=deque)
    steered: list[_PendingTurn] = field(default_factory=list)
    buffers: dict[str, tuple[_PendingTurn, asyncio.TimerHandle]] = field(default_factory=dict)
    held_through: int = 0
    """The newest seq an entry of this line answers (queued, buffered, steered or running):
    a redelivered message at or below it already has its turn coming."""

    @property
    def busy(self) -> bool:
        return self.drain is not None

    def pending(self) -> int:
        """Messages waiting for an answer while the session is busy."""
        buffered = sum(len(entry.texts) for entry, _ in self.buffers.values())
        return buffered + sum(len(e.texts) for e in (*self.waiting, *self.steered))

    def idle(self) -> bool:
        return not (self.busy or self.offers or self.waiting or self.steered or self.buffers)


class SessionQueues:
    """Per-session queues of chat messages (see module docstring); a ``Dispatcher``."""

    def __init__(
        self,
        turns: TurnRunner,
        chat: ChatTurns,
        outbound: OutboundPort,
        tasks: BackgroundTasks,
        *,
        turn_timeout: float | None = None,
    ) -> None:
        """``turn_timeout``: seconds a turn may run before it is cancelled (None: no limit)."""
        self._turns = turns
        self._chat = chat
        self._outbound = outbound
        self._tasks = tasks
        self._turn_timeout = turn_timeout
        self._lines: dict[str, _Line] = {}

    def __len__(self) -> int:
        """Sessions with something running, waiting or buffered (idle ones are forgotten)."""
        return len(self._lines)

    def pending(self) -> int:
        """Messages waiting for an answer, over every session (read by the metrics)."""
        return sum(line.pending() for line in list(self._lines.values()))

    async def offer(self, session_id: str, inbound: Inbound, queue: QueueSpec) -> None:
        """Record ``inbound`` durably (or drop/reject it) and schedule its turn.

        Raises what recording raised (``StorageError``…): the message is not accepted, and
        the pipeline should not confirm the update, so the platform delivers it again.
        """
        line = self._lines.get(session_id)
        if line is None:
            line = self._lines[session_id] = _Line(queue)
        line.spec = queue
        line.offers += 1
        try:
            async with line.lock:  # FIFO: this session's messages are recorded in call order
                await self._offer(session_id, line, inbound)
        finally:
            line.offers -= 1
            self._forget_if_idle(session_id, line)

    def resume(
        self,
        session_id: str,
        chat: ChatRef,
        seq: int,
        text: str,
        reply_to: str | None,
        *,
        queue: QueueSpec | None = None,
        sender_id: str | None = None,
        context_buffer: ContextBufferSpec | None = None,
    ) -> None:
        """Answer messages recorded earlier and never answered (a chat's recovery at start).

        ``queue`` is the chat's rules (the defaults when omitted); ``sender_id`` and
        ``context_buffer`` are what the message would have brought through ``offer``.
        """
        line = self._lines.get(session_id)
        if line is None:
            line = self._lines[session_id] = _Line(queue or QueueSpec())
        elif queue is not None:
            line.spec = queue
        line.waiting.append(_PendingTurn.of(chat, seq, text, reply_to, sender_id, context_buffer))
        line.held_through = max(line.held_through, seq)
        self._start(session_id, line)

    # --- accepting ------------------------------------------------------------------------

    async def _offer(self, session_id: str, line: _Line, inbound: Inbound) -> None:
        spec = line.spec
        busy = line.busy
        if busy and not await self._admit(session_id, line, inbound):
            return
        accepted = await self._turns.accept(
            session_id,
            inbound.text,
            sender_id=inbound.sender_id,
            sender_name=inbound.sender_name,
            platform_message_id=inbound.message_id,
            steer=busy and spec.mode == "batch",
            starts_turn=not (busy or line.buffers),  # its turn starts right after this
        )
        if accepted.answered:
            log.info("session %s: message %s was answered already", session_id, inbound.message_id)
            return
        if accepted.duplicate and accepted.seq <= line.held_through:
            # redelivered while its turn is queued or running (a recovery resumed it): once
            log.info("session %s: message %s has its turn coming", session_id, inbound.message_id)
            return
        line.held_through = max(line.held_through, accepted.seq)
        entry = _PendingTurn.of(
            inbound.chat,
            accepted.seq,
            inbound.text,
            inbound.message_id,
            inbound.sender_id,
            inbound.context_buffer,
        )
        if accepted.steered is not None:
            entry.tickets.append(accepted.steered)
            line.steered.append(entry)
            return
        sender = inbound.sender_id or ""
        debounce = spec.debounce
        if debounce.enabled and debounce.window_ms > 0 and (busy or sender in line.buffers):
            self._buffer(session_id, line, sender, entry, debounce.window_ms / 1000)
            return
        line.waiting.append(entry)
        self._start(session_id, line)

    async def _admit(self, session_id: str, line: _Line, inbound: Inbound) -> bool:
        """Whether a message for a busy session is accepted (decided before recording it)."""
        spec = line.spec
        where = f"session {session_id}: message {inbound.message_id}"
        if spec.mode == "drop":
            log.info("%s dropped: a turn is running (queue mode drop)", where)
            return False
        if line.pending() < spec.max_pending:
            return True
        if spec.overflow == "drop_new":
            log.info("%s dropped: %d messages wait (overflow drop_new)", where, spec.max_pending)
            return False
        if spec.overflow == "reject":
            log.info("%s rejected: %d messages wait (overflow reject)", where, spec.max_pending)
            if spec.reject_message:
                try:
                    await self._outbound.send_text(
                        inbound.chat, spec.reject_message, reply_to=inbound.message_id
                    )
                except Exception as exc:  # rejected either way; a redelivery would be too
                    log.warning("%s: the reject message was not sent: %s", where, exc)
            return False
        self._give_up_oldest(session_id, line)
        return True

    def _give_up_oldest(self, session_id: str, line: _Line) -> None:
        """``drop_old``: the oldest waiting entry loses its own turn (it stays in history)."""
        candidates = [*line.waiting, *(entry for entry, _ in line.buffers.values())]
        if not candidates:
            return  # all are in the running loop already: it answers them
        oldest = min(candidates, key=lambda e: e.first)
        if oldest in line.waiting:
            line.waiting.remove(oldest)
        else:
            for sender, (entry, timer) in list(line.buffers.items()):
                if entry is oldest:
                    timer.cancel()
                    del line.buffers[sender]
        log.info(
            "session %s: message seq %d gives up its turn (overflow drop_old)",
            session_id,
            oldest.first,
        )

    def _buffer(
        self, session_id: str, line: _Line, sender: str, entry: _PendingTurn, window: float
    ) -> None:
        held = line.buffers.get(sender)
        if held is not None:
            held[0].absorb(entry)
            return
        loop = asyncio.get_running_loop()
        timer = loop.call_later(window, self._flush, session_id, line, sender)
        line.buffers[sender] = (entry, timer)

    def _flush(self, session_id: str, line: _Line, sender: str) -> None:
        """A sender went quiet: their buffered messages join the line as one entry."""
        held = line.buffers.pop(sender, None)
        if held is None:
            return
        line.waiting.append(held[0])
        self._start(session_id, line)  # at once when the session went idle meanwhile

    # --- answering ------------------------------------------------------------------------

    def _start(self, session_id: str, line: _Line) -> None:
        if line.drain is None and line.waiting:
            line.drain = self._tasks.spawn(
                self._drain(session_id, line), name=f"chat-queue-{session_id}"
            )

    async def _drain(self, session_id: str, line: _Line) -> None:
        try:
            while (entry := self._next(line)) is not None:
                await self._answer(session_id, entry, sequential=line.spec.mode == "sequential")
                await self._requeue_unanswered(session_id, line)
        finally:  # cancelled too: whatever was handed to the loop waits for the next drain
            line.drain = None
            left = _merged(line.steered)
            line.steered.clear()
            if left is not None:
                line.waiting.appendleft(left)
            self._forget_if_idle(session_id, line)

    def _next(self, line: _Line) -> _PendingTurn | None:
        if not line.waiting:
            return None
        if line.spec.mode == "batch":
            merged = _merged(line.waiting)
            line.waiting.clear()
            return merged
        return line.waiting.popleft()

    async def _answer(
        self, session_id: str, entry: _PendingTurn, *, sequential: bool = False
    ) -> None:
        text = "\n".join(entry.texts)
        try:
            await self._chat.answer(
                entry.chat,
                session_id,
                entry.seq,
                text,
                reply_to=entry.reply_to,
                sender_id=entry.sender_id,
                context_buffer=entry.context_buffer,
                only_through=sequential,
                turn_timeout=self._turn_timeout,
            )
        except UndeliveredError as exc:  # the answer exists: not a failed turn
            log.error("session %s: answer for seq %d not delivered: %s", session_id, entry.seq, exc)
            if not exc.told:
                await self._tell(entry, UNDELIVERED)
        except Exception as exc:  # a timeout, a storage error, a bug: the line moves on
            log.error("session %s: turn for seq %d ended early: %s", session_id, entry.seq, exc)
            await self._tell_failed(session_id, entry, exc)

    async def _tell_failed(self, session_id: str, entry: _PendingTurn, exc: Exception) -> None:
        """Record the turn as failed and send the apology as its delivered end.

        Recorded, the messages are settled: a restart does not answer them again after the
        person was told to send them again (two turns for one message). When even the record
        fails (the store is away), the apology is sent anyway.
        """
        code = "turn_timeout" if isinstance(exc, TimeoutError) else "turn_failed"
        try:
            seq = await self._turns.record_failure(session_id, code, str(exc) or code)
        except Exception as again:
            log.error("session %s: the failed turn was not recorded: %s", session_id, again)
            await self._tell(entry, TURN_FAILED)
            return
        try:
            await self._chat.delivery.tell_failure(
                entry.chat, session_id, seq, TURN_FAILED, entry.reply_to
            )
        except Exception as again:
            log.warning("could not tell %s that its turn failed: %s", entry.chat.target, again)

    async def _tell(self, entry: _PendingTurn, text: str) -> None:
        try:
            await self._outbound.send_text(entry.chat, text, reply_to=entry.reply_to)
        except Exception as exc:
            log.warning("could not tell %s: %r: %s", entry.chat.target, text[:40], exc)

    async def _requeue_unanswered(self, session_id: str, line: _Line) -> None:
        """Messages handed to a loop that ended without reading them get a turn of their own.

        The loop's tickets say which it read. One it did not read waits for its turn, unless
        the loop paused on an approval asked after it arrived: the model sees it when that
        turn goes on (a message recorded after the request is a new message, which cancels
        the approval, as any would).
        """
        if not line.steered:
            return
        steered, line.steered = line.steered, []
        try:
            info = await self._turns.sessions.info(session_id)
        except Exception as exc:
            log.error("session %s: could not check what the turn answered: %s", session_id, exc)
            return
        paused = info.pending_approval is not None
        left = _merged(
            e
            for e in steered
            if e.seq > info.last_settled_seq or (not paused and not all(t.read for t in e.tickets))
        )
        if left is not None:
            line.waiting.appendleft(left)

    def _forget_if_idle(self, session_id: str, line: _Line) -> None:
        if line.idle() and self._lines.get(session_id) is line:
            del self._lines[session_id]
