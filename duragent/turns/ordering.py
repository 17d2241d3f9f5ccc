"""``Ordering``: a chat's messages recorded at once, answered one turn at a time, in order.

The per-session order of a conversation is the session's ``Line`` (``turns.lines``): the same
object holds the running loop (its lock, its inbox for steering) and what waits for a turn of
its own (issue 35: the chat queue's state used to live in ``frontkit`` apart from the runner's).
A front end submits each message (``TurnRunner.submit``), in arrival order; the call returns
once the message is **durably recorded** (or deliberately dropped or rejected, before anything
is recorded) and never waits for a model. The turns run later, one at a time per session, as
tasks of the front end's ``BackgroundTasks``; each is answered through the submitting front
end (``Front.answer``: a chat runs the turn and delivers its reply, as a reply to the message
that started it).

What happens to a message (``QueueSpec`` of the agent's access block):

- **Idle session**: recorded (with what its turn starts from: ``TurnRunner.accept``'s
  ``starts_turn``), its turn starts at once (also with debounce on: the first message of an
  idle session is never delayed).
- **Busy session** (a turn runs or is due), by ``mode``:
  - ``batch``: recorded and handed to the running loop (steered through the line's inbox, as
    HTTP's ``run`` does), which answers it in the same reply; whatever that loop did not get
    to (it had already finished, or failed before it) is answered by one more turn, together.
  - ``sequential``: recorded, not steered: after the running turn, each message gets a turn
    and a reply of its own, in order. Its turn is run with ``TurnRunner.answer``, which shows
    the model the message again at the end of the conversation when replies were written
    after it (the history on disk keeps the arrival order).
  - ``drop``: not recorded, not answered; logged. Dropping happens *before* accepting:
    nothing accepted is lost.
- **Full** (``max_pending`` messages already wait, steered ones included), by ``overflow``:
  ``drop_new`` drops the new message (not recorded, logged); ``reject`` does the same and
  answers it with ``reject_message`` when one is set (``Front.reject``); ``drop_old`` records
  the new message and the oldest waiting one gives up its own turn (it stays in the history,
  where the next turn's model sees it; a message already handed to a running loop is never
  taken back).
- **A member's approval in a group** (``turns.approval_wait``): someone else's turn waits
  for the requester's decision, at most ``approval_wait_seconds``, instead of cancelling it.
- **Debounce** (per sender, ``window_ms``): while a session is busy, a sender's messages are
  buffered (each recorded at once) and, once the sender is quiet for the window, join the
  waiting line as one entry: one turn, the texts joined by newlines. A buffer that flushes
  after the session went idle starts its turn at once (the reference left it waiting for
  the next message).

Never wedged: whatever a turn does — a reply, a failure, a timeout, an exception, a
cancellation — the session's line moves on or is released (``Front.answer`` says the failure
in the chat); a message arriving after a cancelled drain starts a new one (the reference
stayed "busy" forever when its handler was cancelled). Memory is bounded by active chats: a
session's line is forgotten as soon as nothing runs, waits, is buffered or is being offered
for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from duragent.agents.spec import ContextBufferSpec, QueueSpec
from duragent.core.attachments import Attachment
from duragent.core.caller import ChatRef
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.turns.approval_wait import wait_for_requester
from duragent.turns.inbox import Steered
from duragent.turns.lines import Line, Lines

if TYPE_CHECKING:
    from duragent.turns.runner import TurnRunner

__all__ = ["Front", "Inbound", "Ordering", "PendingTurn"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Inbound:
    """One message from a chat, as a gateway hands it over."""

    chat: ChatRef
    text: str
    agent: str
    """The agent this chat talks to (the gateway's routing decides)."""
    sender_id: str | None = None
    sender_name: str | None = None
    message_id: str | None = None
    """The platform's id: a redelivery is recognised by it, and the reply answers it."""
    context_buffer: ContextBufferSpec | None = None
    """A group turn under ``activation: mention`` (silent buffer): the group's recent chatter,
    read from the session's durable buffer when the turn starts, is given to it as a block."""
    attachments: tuple[Attachment, ...] = ()
    """Photos, voice notes, files it carried, kept first (``TurnRunner.attachments``)."""


class Front(Protocol):
    """The front end a line's turns are answered through (a chat gateway's kit)."""

    @property
    def tasks(self) -> BackgroundTasks:
        """Where the line's drain runs (ended with the front end)."""
        ...

    async def answer(self, session_id: str, turn: PendingTurn, *, sequential: bool) -> None:
        """Run ``turn`` and deliver its outcome; a failure is told in the chat, not raised."""
        ...

    async def reject(self, inbound: Inbound, text: str) -> None:
        """Tell the sender of ``inbound`` that it was refused (``overflow: reject``)."""
        ...


@dataclass(slots=True)
class PendingTurn:
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
    ) -> PendingTurn:
        """The turn for one recorded message."""
        return cls(chat, seq, seq, [text], reply_to, sender_id, context_buffer)

    def absorb(self, later: PendingTurn) -> None:
        """Answer ``later``'s messages in this turn too (one turn, one reply)."""
        self.texts.extend(later.texts)
        self.tickets.extend(later.tickets)
        self.seq = max(self.seq, later.seq)
        self.context_buffer = self.context_buffer or later.context_buffer


def _merged(entries: Iterable[PendingTurn]) -> PendingTurn | None:
    """One entry answering ``entries`` together, in arrival order (None: nothing)."""
    ordered = sorted(entries, key=lambda e: e.first)
    if not ordered:
        return None
    head = ordered[0]
    merged = PendingTurn(
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


class Ordering:
    """Every session line's waiting turns (see module docstring); ``TurnRunner`` owns one."""

    __slots__ = ("_lines", "_runner")

    def __init__(self, runner: TurnRunner, lines: Lines) -> None:
        self._runner = runner
        self._lines = lines

    def active(self) -> int:
        """Sessions with something running, waiting or buffered for a front end."""
        return sum(1 for line in self._lines.all() if line.front is not None and not line.idle())

    def pending(self) -> int:
        """Messages waiting for an answer, over every session (read by the metrics)."""
        return sum(line.pending() for line in self._lines.all())

    async def submit(
        self, session_id: str, inbound: Inbound, queue: QueueSpec, front: Front
    ) -> None:
        """Record ``inbound`` durably (or drop/reject it) and schedule its turn.

        Raises what recording raised (``StorageError``…): the message is not accepted, and
        the front end should not confirm the update, so the platform delivers it again.
        """
        line = self._lines.line(session_id)
        line.queue = queue
        line.front = front
        line.offers += 1
        try:
            async with line.offer_lock:  # FIFO: the session's messages recorded in call order
                await self._offer(session_id, line, inbound)
        finally:
            line.offers -= 1
            self._forget_if_idle(session_id, line)

    def resume(
        self,
        session_id: str,
        turn: PendingTurn,
        front: Front,
        queue: QueueSpec | None = None,
    ) -> None:
        """Answer messages recorded earlier and never answered (a chat's recovery at start).

        ``queue`` is the chat's rules (the defaults when omitted).
        """
        line = self._lines.line(session_id)
        if turn.seq <= line.held_through:  # a message taken in meanwhile: one turn for both
            log.info("session %s: messages through %d have their turn coming", session_id, turn.seq)
            return
        line.front = front
        if queue is not None:
            line.queue = queue
        line.waiting.append(turn)
        line.held_through = max(line.held_through, turn.seq)
        self._start(session_id, line)

    # --- accepting ------------------------------------------------------------------------

    async def _offer(self, session_id: str, line: Line, inbound: Inbound) -> None:
        spec = line.queue
        # an approved call's turn going on holds the lock outside any drain: a message now
        # must not start a turn (recording it with a turn's context closes open calls)
        busy = line.busy or line.lock.locked()
        if busy and not await self._admit(session_id, line, inbound):
            return
        accepted = await self._runner.accept(
            session_id,
            inbound.text,
            sender_id=inbound.sender_id,
            sender_name=inbound.sender_name,
            platform_message_id=inbound.message_id,
            steer=busy and spec.mode == "batch",
            starts_turn=not (busy or line.buffers),  # its turn starts right after this
            attachments=inbound.attachments,
        )
        if accepted.answered:
            log.info("session %s: message %s was answered already", session_id, inbound.message_id)
            return
        if accepted.seq <= line.held_through:
            # redelivered while its turn is queued or running, or recorded while a recovery
            # (a session taken over from a dead node) resumed it: answered once
            log.info("session %s: message %s has its turn coming", session_id, inbound.message_id)
            return
        line.held_through = max(line.held_through, accepted.seq)
        entry = PendingTurn.of(
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

    async def _admit(self, session_id: str, line: Line, inbound: Inbound) -> bool:
        """Whether a message for a busy session is accepted (decided before recording it)."""
        spec = line.queue
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
            if spec.reject_message and line.front is not None:
                try:
                    await line.front.reject(inbound, spec.reject_message)
                except Exception as exc:  # rejected either way; a redelivery would be too
                    log.warning("%s: the reject message was not sent: %s", where, exc)
            return False
        self._give_up_oldest(session_id, line)
        return True

    def _give_up_oldest(self, session_id: str, line: Line) -> None:
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
        self, session_id: str, line: Line, sender: str, entry: PendingTurn, window: float
    ) -> None:
        held = line.buffers.get(sender)
        if held is not None:
            held[0].absorb(entry)
            return
        loop = asyncio.get_running_loop()
        timer = loop.call_later(window, self._flush, session_id, line, sender)
        line.buffers[sender] = (entry, timer)

    def _flush(self, session_id: str, line: Line, sender: str) -> None:
        """A sender went quiet: their buffered messages join the line as one entry."""
        held = line.buffers.pop(sender, None)
        if held is None:
            return
        line.waiting.append(held[0])
        self._start(session_id, line)  # at once when the session went idle meanwhile

    # --- answering ------------------------------------------------------------------------

    def _start(self, session_id: str, line: Line) -> None:
        if line.drain is None and line.waiting:
            assert line.front is not None, "a line with waiting turns has a front end"
            line.drain = line.front.tasks.spawn(
                self._drain(session_id, line), name=f"chat-queue-{session_id}"
            )

    async def _drain(self, session_id: str, line: Line) -> None:
        try:
            while (entry := self._next(line)) is not None:
                await wait_for_requester(
                    self._runner.sessions, self._lines, session_id, line, entry
                )
                await self._answer(session_id, line, entry)
                await self._requeue_unanswered(session_id, line)
        finally:  # cancelled too: whatever was handed to the loop waits for the next drain
            line.drain = None
            left = _merged(line.steered)
            line.steered.clear()
            if left is not None:
                line.waiting.appendleft(left)
            self._forget_if_idle(session_id, line)

    def _next(self, line: Line) -> PendingTurn | None:
        if not line.waiting:
            return None
        if line.queue.mode == "batch":
            merged = _merged(line.waiting)
            line.waiting.clear()
            return merged
        return line.waiting.popleft()

    async def _answer(self, session_id: str, line: Line, entry: PendingTurn) -> None:
        front = line.front
        assert front is not None
        try:
            await front.answer(session_id, entry, sequential=line.queue.mode == "sequential")
        except Exception as exc:  # the front end tells failures; the line moves on regardless
            log.error("session %s: turn for seq %d ended early: %s", session_id, entry.seq, exc)

    async def _requeue_unanswered(self, session_id: str, line: Line) -> None:
        """Messages handed to a loop that left them unsettled get a turn of their own.

        Each ticket says how its loop ended (``Steered.needs_own_turn``, the one steering
        rule, ``turns.steering``): read by a loop that answered, nothing more is due; kept
        by a loop that paused on an approval, the model sees it when that turn goes on;
        anything else waits for one more turn. Nothing is asked of the session.
        """
        if not line.steered:
            return
        if not all(t.settled for entry in line.steered for t in entry.tickets):
            await self._lines.loop_ended(session_id)  # steered into a loop begun after ours
        steered, line.steered = line.steered, []
        left = _merged(e for e in steered if any(t.needs_own_turn for t in e.tickets))
        if left is not None:
            line.waiting.appendleft(left)

    def _forget_if_idle(self, session_id: str, line: Line) -> None:
        self._lines.forget_if_idle(session_id, line)
