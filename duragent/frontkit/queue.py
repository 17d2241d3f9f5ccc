"""``SessionQueues``: a chat gateway's messages submitted to their session's line, in order.

A chat platform wants each update confirmed quickly, and a person may write three messages
while the model still answers the first. ``offer`` is what the chat pipeline calls for each
message, in arrival order; it returns once the message is **durably recorded** (or
deliberately dropped or rejected, before anything is recorded) and never waits for a model.
The order itself (batch, sequential, drop, overflow, debounce, steering) is the session's
line in ``turns`` (``turns.ordering``, ``TurnRunner.submit``): one owner of a
conversation's order for every front end (issue 35). What is a chat's own is here: this is
the line's ``Front``, which runs each due turn through ``ChatTurns.answer`` and delivers it
(each reply once, as a reply to the message that started the turn), and says what went
wrong in the chat.

A turn that times out (``turn_timeout``) or raises gets a short apology in the chat, recorded
as the turn's failed end (an ``error`` event: a restart does not answer it again). A reply
that exists is never apologised for: while the platform refuses it for a while, the
gateway's ``Outbox`` waits it out and the session's next turn waits behind it (its messages
are recorded meanwhile, as always; ``turn_timeout`` bounds the turn, not the delivery); one
given up or refused outright is ``UndeliveredError``, told once (``UNDELIVERED``), and the
person is not invited to ask again.
"""

from __future__ import annotations

import logging
from typing import Protocol

from duragent.agents.spec import ContextBufferSpec, QueueSpec
from duragent.frontkit.chat import ChatTurns, Inbound
from duragent.frontkit.outbound import ChatRef, OutboundPort
from duragent.frontkit.outbox import UNDELIVERED, UndeliveredError
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.turns import PendingTurn, Queued, TurnRunner

__all__ = ["TURN_FAILED", "Dispatcher", "SessionQueues"]

log = logging.getLogger(__name__)

TURN_FAILED = "Sorry, I could not answer that. Your message is saved; you can send it again."
"""Sent when a turn times out or fails outside the model (the model's own failures are
answered by the runner's ``Failed`` sentence)."""


class Dispatcher(Protocol):
    """What the chat pipeline hands an accepted message to (``SessionQueues``)."""

    async def offer(self, session_id: str, inbound: Inbound, queue: QueueSpec) -> None:
        """Accept ``inbound`` for its session: recorded durably before returning."""
        ...


class SessionQueues:
    """A chat gateway's ``Dispatcher``, and the ``Front`` of its sessions' lines."""

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

    def __len__(self) -> int:
        """Sessions with something running, waiting or buffered (idle ones are forgotten)."""
        return self._turns.ordering.active()

    def pending(self) -> int:
        """Messages waiting for an answer, over every session (read by the metrics)."""
        return self._turns.ordering.pending()

    @property
    def tasks(self) -> BackgroundTasks:
        """Where the sessions' drains run (the runtime's task owner)."""
        return self._tasks

    async def offer(self, session_id: str, inbound: Inbound, queue: QueueSpec) -> None:
        """Record ``inbound`` durably (or drop/reject it) and schedule its turn.

        Raises what recording raised (``StorageError``…): the message is not accepted, and
        the pipeline should not confirm the update, so the platform delivers it again.
        """
        await self._turns.submit(session_id, inbound, Queued(queue, self))

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
        turn = PendingTurn.of(chat, seq, text, reply_to, sender_id, context_buffer)
        self._turns.ordering.resume(session_id, turn, self, queue)

    async def reject(self, inbound: Inbound, text: str) -> None:
        """Answer a message the queue's ``overflow: reject`` refused."""
        await self._outbound.send_text(inbound.chat, text, reply_to=inbound.message_id)

    async def answer(self, session_id: str, turn: PendingTurn, *, sequential: bool) -> None:
        """Run ``turn`` and deliver its reply; a failure is told in the chat, never raised."""
        entry = turn
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

    async def _tell_failed(self, session_id: str, entry: PendingTurn, exc: Exception) -> None:
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

    async def _tell(self, entry: PendingTurn, text: str) -> None:
        try:
            await self._outbound.send_text(entry.chat, text, reply_to=entry.reply_to)
        except Exception as exc:
            log.warning("could not tell %s: %r: %s", entry.chat.target, text[:40], exc)
