"""``ChatTurns``: a chat's due turn run and its reply delivered — what every chat gateway shares.

A chat gateway (Telegram, Discord) only translates: an SDK update becomes an ``Inbound``,
and ``OutboundPort`` calls become SDK calls. The kit's pipeline (``ChatFront``) finds the
chat's session and hands the message to the chat queue (``SessionQueues``), which records it
and, once its turn is due, runs it here under the runtime's ``BackgroundTasks`` (a platform's
polling loop never waits for a model; a turn running at shutdown is cancelled cleanly). There
is no other way in: one path for every chat message, the one production runs. Here, once:

- the turn for messages already recorded (``answer``), shown the group's recent chatter when
  a group message addressed the bot;
- "typing…" while the turn runs (refreshed, since platforms expire it; a refusal is logged
  and never ends the turn);
- delivery of the reply once (``Delivery``: a message that joined a running turn sends
  nothing; a reply already recorded as delivered is not sent again);
- the reply shown as it is written, where the platform can and the agent wants it
  (``preview``: a preview message edited as text arrives, final in place);
- a person's decision on a pending tool call, with "nothing waits" and "another call waits"
  told apart by class (``NoPendingApprovalError``, ``ApprovalMismatchError``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable

from duragent.agents.spec import ContextBufferSpec
from duragent.frontkit.delivery import Delivery
from duragent.frontkit.group_context import read_group_context
from duragent.frontkit.outbound import ChatRef, OutboundPort, SentMessage
from duragent.frontkit.preview import Previews
from duragent.frontkit.preview_store import preview_records
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.observability.logctx import log_context, new_turn_id
from duragent.store.cluster_protocols import PreviewRows
from duragent.turns import (
    ApprovalDecision,
    ApprovalMismatchError,
    Inbound,
    NoPendingApprovalError,
    TurnRunner,
)

__all__ = ["NOTHING_PENDING", "OTHER_CALL_PENDING", "ChatTurns", "Inbound"]

log = logging.getLogger(__name__)

TYPING_EVERY_SECONDS = 4.0
"""Telegram shows "typing…" for 5 s; refreshing a little sooner keeps it on."""

NOTHING_PENDING = "Nothing is waiting for a decision any more."
OTHER_CALL_PENDING = "That request is no longer the one waiting for a decision."


class ChatTurns:
    """Runs chat messages as turns and delivers their replies (see module docstring)."""

    def __init__(
        self,
        turns: TurnRunner,
        outbound: OutboundPort,
        tasks: BackgroundTasks,
        *,
        typing_every: float = TYPING_EVERY_SECONDS,
        previews: PreviewRows | None = None,
    ) -> None:
        """``previews``: where every node records reply previews (None: this workspace)."""
        self._turns = turns
        self._outbound = outbound
        self._tasks = tasks
        self._typing_every = typing_every
        self.delivery = Delivery(turns, outbound, agents=turns.agents)
        records = preview_records(turns.workspace_dir, previews)
        self.previews = Previews.over(outbound, records, turns.agents)
        """Replies shown as they are written (None: the platform shows no previews)."""
        self.delivery.previews = self.previews

    @property
    def turns(self) -> TurnRunner:
        """The turn runner the messages run on."""
        return self._turns

    @property
    def outbound(self) -> OutboundPort:
        """The port replies go out through."""
        return self._outbound

    @property
    def tasks(self) -> BackgroundTasks:
        """The runtime's task owner (decisions run under it)."""
        return self._tasks

    async def answer(
        self,
        chat: ChatRef,
        session_id: str,
        seq: int,
        text: str,
        *,
        reply_to: str | None,
        sender_id: str | None = None,
        context_buffer: ContextBufferSpec | None = None,
        only_through: bool = False,
        turn_timeout: float | None = None,
    ) -> SentMessage | None:
        """Run the turn for messages already recorded (up to ``seq``) and deliver its reply.

        What a chat queue (``SessionQueues``) calls once a message it accepted is due:
        ``TurnRunner.answer`` records nothing, ``text`` is what the turn answers. With
        ``context_buffer`` (a group message that addressed the bot), the group's recent
        chatter is shown to the model as a block.

        ``turn_timeout`` bounds the turn (``TimeoutError``), not its delivery: a reply that
        exists may wait out the platform's refusals for longer (``Outbox``), and raises
        ``UndeliveredError`` if it is given up, never ``TimeoutError``.

        With previews, the reply is shown as it is written (``preview``); a turn that raises
        deletes its preview (the failure is told instead), one cancelled leaves it to the
        next start's recovery.
        """
        stream = None if self.previews is None else self.previews.stream(chat, session_id, reply_to)
        with log_context(session_id=session_id, front_end=chat.gateway, turn_id=new_turn_id()):
            try:
                async with asyncio.timeout(turn_timeout):
                    blocks = await self._group_blocks(session_id, context_buffer)
                    async with self._typing(chat):
                        result = await self._turns.answer(
                            session_id,
                            seq,
                            text,
                            sink=stream,
                            context_blocks=blocks,
                            sender_id=sender_id,
                            only_through=only_through,
                        )
            except asyncio.CancelledError:
                if stream is not None:
                    stream.stop()
                raise
            except BaseException:
                if stream is not None:
                    await stream.discard()
                raise
            return await self.delivery.deliver(chat, result, reply_to=reply_to, stream=stream)

    async def _group_blocks(
        self, session_id: str, buffer: ContextBufferSpec | None
    ) -> tuple[str, ...]:
        if buffer is None:
            return ()
        block = await read_group_context(self._turns.sessions, session_id, buffer)
        return (block,) if block else ()

    async def decide(
        self,
        chat: ChatRef,
        session_id: str,
        call_id: str,
        decision: ApprovalDecision,
        *,
        on_recorded: Callable[[int], None] | None = None,
    ) -> SentMessage | None:
        """Apply a person's decision and deliver the rest of the turn it resumed.

        ``on_recorded`` gets the decision's seq once it is on disk (before the call runs).
        """
        try:
            async with self._typing(chat):
                result = await self._turns.approve(
                    session_id, call_id, decision, on_recorded=on_recorded
                )
        except NoPendingApprovalError:
            return await self._outbound.send_text(chat, NOTHING_PENDING)
        except ApprovalMismatchError:
            return await self._outbound.send_text(chat, OTHER_CALL_PENDING)
        return await self.delivery.deliver(chat, result)

    @contextlib.asynccontextmanager
    async def _typing(self, chat: ChatRef) -> AsyncIterator[None]:
        """Keep "typing…" shown for the block (a task of the block's own, ended with it).

        Ended by a flag as well as a cancellation: a port whose send swallows the
        cancellation (``asyncio.wait_for`` on Python 3.11 can, when the cancel lands as the
        send completes) must not keep typing, or keep the turn waiting, for ever.
        """
        stop = asyncio.Event()
        task = asyncio.create_task(self._keep_typing(chat, stop), name=f"typing-{chat.target}")
        try:
            yield
        finally:
            stop.set()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _keep_typing(self, chat: ChatRef, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self._outbound.send_typing(chat)
            except Exception as exc:  # a courtesy: the turn goes on without it
                log.debug("typing indicator for %s failed: %s", chat.target, exc)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._typing_every):
                    await stop.wait()
