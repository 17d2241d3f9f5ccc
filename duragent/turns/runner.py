"""The one turn runner: every front end starts a turn through ``TurnRunner.submit``.

A turn: persist the inbound message (fsync'd before anything else happens, de-duplicated by
platform id) → build the context → run the agentic loop → persist the reply (fsync'd before it
is returned) → return it. HTTP, Telegram, Discord, the scheduler and the CLI all come here;
nothing else orchestrates a turn. How a submitter waits (a chat's queue, a request's ticket)
is ``turns.tickets``; each session's order (one loop at a time, what waits) is its line
(``turns.lines``, ``turns.ordering``); a message that arrives while a loop runs joins it
(``turns.steering``). A message that arrives while a tool call waits for approval cancels
that approval (the call recorded as skipped, the decision as ``deny``) and starts a turn.

A queued turn is split in two: ``accept`` records the message at once (and steers it into a
running loop, if asked), so the platform's update is confirmed without waiting for a model;
``answer`` later runs the turn for what was recorded, recording nothing again. A message that
starts its turn at once is recorded with what the turn starts from, and ``answer`` reuses
that when the session took no write since: a chat turn asks its session twice, as an HTTP
turn does (issue 35). What the runner writes outside turns is ``between_turns``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import overload

from duragent.agents import Agent, AgentCatalog
from duragent.core.approval import DECISIONS
from duragent.core.attachments import Attachment
from duragent.core.messages import Message
from duragent.errors import StorageError
from duragent.observability.logctx import current, log_context, turn_scope
from duragent.observability.metrics import Metrics
from duragent.session import (
    SessionHandle,
    SessionRegistry,
    UserMessageResult,
)
from duragent.tools.base import SessionReader, Tool
from duragent.tools.sandbox import TRUST, Sandbox
from duragent.turns.approving import Approving
from duragent.turns.attachments import SessionAttachments
from duragent.turns.between_turns import BetweenTurns
from duragent.turns.context import ContextFactory
from duragent.turns.driving import TurnDriver, cancel_approval
from duragent.turns.inbox import Ending, Inbox
from duragent.turns.interruptions import noting_interruption, recorded_outcome
from duragent.turns.lines import Line, Lines
from duragent.turns.ordering import Inbound, Ordering
from duragent.turns.providers import ProviderPool
from duragent.turns.recorded import Accepted, Incoming, Recorded, needs_restating
from duragent.turns.result import TurnResult
from duragent.turns.sessions import SessionQueries
from duragent.turns.sink import TurnSink
from duragent.turns.steering import ending_of, join_running
from duragent.turns.tickets import Queued, Ticket, Waited

__all__ = ["DECISIONS", "Accepted", "TurnResult", "TurnRunner"]

log = logging.getLogger(__name__)


class TurnRunner(BetweenTurns, Approving):
    """Runs turns for every front end (see module docstring)."""

    def __init__(
        self,
        registry: SessionRegistry,
        *,
        agents: Callable[[], AgentCatalog],
        providers: ProviderPool,
        workspace_dir: Path,
        world_memory_dir: Path,
        policy_file: Path,
        sessions: SessionReader | None = None,
        extra_tools: Callable[[Agent, str], Sequence[Tool]] | None = None,
        env: Mapping[str, str] | None = None,
        sandbox: Sandbox = TRUST,
        metrics: Metrics | None = None,
    ) -> None:
        self._registry = registry
        self.sessions = SessionQueries(registry)
        """What front ends may read of sessions (they write only through this runner)."""
        self.attachments = SessionAttachments(registry)
        """Where a front end keeps a message's bytes before submitting it."""
        self.workspace_dir = workspace_dir
        """The workspace's ``.duragent`` folder (chat front ends keep pairing files there)."""
        self._agents = agents
        self._metrics = metrics
        contexts = ContextFactory(
            registry,
            providers=providers,
            workspace_dir=workspace_dir,
            world_memory_dir=world_memory_dir,
            policy_file=policy_file,
            sessions=sessions,
            extra_tools=extra_tools,
            env=os.environ if env is None else env,
            sandbox=sandbox,
            metrics=metrics,
        )
        self._driver = TurnDriver(contexts, agents)
        self._pin_rooms = contexts.pin_rooms
        self._lines = Lines()
        self.ordering = Ordering(self, self._lines)
        """Each chat's waiting turns, on its session's line (``submit``)."""

    @property
    def agents(self) -> Callable[[], AgentCatalog]:
        """The agents' catalog as loaded now (a reload replaces it): whose rules hold."""
        return self._agents

    @property
    def metrics(self) -> Metrics | None:
        """Where turns and model calls are counted (None: metrics are off)."""
        return self._metrics

    def is_running(self, session_id: str) -> bool:
        """Whether a loop is running for the session."""
        return self._lines.running(session_id) is not None

    async def loop_ended(self, session_id: str) -> None:
        """Return once no loop runs for the session (at once when none does); no polling."""
        await self._lines.loop_ended(session_id)

    # --- turns ------------------------------------------------------------------------------

    async def run(
        self,
        session_id: str,
        content: str,
        *,
        sender_id: str | None = None,
        sender_name: str | None = None,
        platform_message_id: str | None = None,
        sink: TurnSink | None = None,
        context_blocks: Sequence[str] = (),
        agent: str | None = None,
    ) -> TurnResult:
        """A waited submission in one call (scripts, tests): ``submit`` with ``Waited``."""
        incoming = Incoming(
            content, sender_id, sender_name, platform_message_id, context_blocks, agent
        )
        ticket = await self.submit(session_id, incoming, Waited(sink=sink))
        return await ticket

    @overload
    async def submit(self, session_id: str, message: Inbound, how: Queued) -> None: ...

    @overload
    async def submit(self, session_id: str, message: Incoming, how: Waited) -> Ticket: ...

    async def submit(
        self, session_id: str, message: Inbound | Incoming, how: Queued | Waited
    ) -> Ticket | None:
        """Give the session's line a message: the one way every front end starts a turn.

        ``Queued`` (a chat): returns once the message is on disk (or dropped or rejected by
        the queue rules), never waiting for a model; its turn is answered through the
        front end (``turns.ordering``). ``Waited`` (HTTP, the OpenAI endpoint): returns the
        ``Ticket`` of its turn at once (``turns.tickets``): the message is recorded and
        steered into the running loop, or starts its own turn. ``Incoming.context_blocks``
        are quoted before the message in the turn it starts (a group's recent chatter: never
        system text), counted against the budget, never stored; ``Incoming.agent`` is the
        agent the session must be of (``SessionAgentMismatchError`` before any write).
        """
        if isinstance(how, Queued):
            assert isinstance(message, Inbound), "a queued message comes from a chat"
            await self.ordering.submit(session_id, message, how.queue, how.front)
            return None
        assert isinstance(message, Incoming), "a waited message is recorded by its turn"
        return Ticket(self._waited(session_id, message, how.sink), how)

    async def _waited(
        self, session_id: str, message: Incoming, sink: TurnSink | None
    ) -> TurnResult:
        with turn_scope(session_id), self._lines.hold(session_id) as active:  # logctx
            return await self._run(self._registry.handle(session_id), active, sink, message)

    async def accept(
        self,
        session_id: str,
        content: str,
        *,
        sender_id: str | None = None,
        sender_name: str | None = None,
        platform_message_id: str | None = None,
        steer: bool = True,
        starts_turn: bool = False,
        attachments: tuple[Attachment, ...] = (),
    ) -> Accepted:
        """Record an inbound message now; its turn runs later (``answer``), or not at all.

        For a chat queue, which must confirm a platform's update without waiting for a model.
        With ``steer``, a message arriving while a loop runs is handed to that loop (as
        ``run`` does); ``steered`` is its ticket, which says once the loop has ended whether
        it read the message (if not, the message needs a turn of its own). A redelivered
        platform id is not recorded again (``duplicate``; ``answered`` when a reply followed
        it).

        ``starts_turn``: the caller answers this message next, at once (a chat queue with
        nothing else running, waiting or buffered for the session). With no loop running,
        the message is recorded with what its turn starts from, in the same round trip, and
        ``answer`` reuses that if the session took no write in between (else asks again).
        """
        incoming = Incoming(
            content, sender_id, sender_name, platform_message_id, attachments=attachments
        )
        handle = self._registry.handle(session_id)
        if starts_turn and self._lines.running(session_id) is None:
            recorded = await incoming.record(handle, with_context=True)
            stamp = self._registry.stamp(session_id)
            if stamp is not None and not recorded.answered:
                self._lines.keep_context(session_id, recorded, stamp)
        else:
            recorded = await incoming.record(handle)
        if recorded.duplicate:
            return Accepted(recorded.seq, duplicate=True, answered=recorded.answered)
        with self._lines.hold(session_id) as line:
            if steer and line.loop_running() is not None:
                return Accepted(recorded.seq, steered=line.inbox.put(content, recorded.seq))
        return Accepted(recorded.seq)

    async def answer(
        self,
        session_id: str,
        seq: int,
        content: str,
        *,
        sink: TurnSink | None = None,
        context_blocks: Sequence[str] = (),
        sender_id: str | None = None,
        only_through: bool = False,
    ) -> TurnResult:
        """Run a turn for messages ``accept`` recorded, up to ``seq``; nothing is recorded.

        ``only_through``: later messages wait for turns of their own (a ``sequential`` chat
        queue): the reply records that it answers up to ``seq`` only, so a recovery after a
        crash still finds them waiting. ``content`` is what the turn answers (the messages'
        text, joined by newlines); when replies or later messages were recorded after them,
        the model is shown ``content`` again at the end (not on disk), unless only this
        turn's own tool exchange follows them (``needs_restating``). A running loop is
        waited for first; this turn never joins it.
        """
        with turn_scope(session_id), self._lines.hold(session_id) as active:
            while (running := active.running) is not None and not running.done():
                await asyncio.wait([running])  # its outcome is its caller's; never cancels it
            session = self._registry.handle(session_id)
            recorded = Recorded(
                seq, content, context_blocks, sender_id, seq if only_through else None
            )
            return await self._run(session, active, sink, recorded)

    async def _run(
        self,
        session: SessionHandle,
        active: Line,
        sink: TurnSink | None,
        inbound: Incoming | Recorded,
    ) -> TurnResult:
        running = active.running
        if running is not None and not running.done():
            assert isinstance(inbound, Incoming), "answer waits for the running loop first"
            own = inbound  # the message needs its own turn: after the running one
            return await join_running(
                session,
                active,
                running,
                inbound,
                sink,
                lambda seq: self.answer(
                    session.session_id,
                    seq,
                    own.content,
                    sink=sink,
                    context_blocks=own.context_blocks,
                    sender_id=own.sender_id,
                ),
            )
        future: asyncio.Future[TurnResult] = asyncio.get_running_loop().create_future()
        active.running = future  # claimed before any await: later messages steer this turn
        inbox = active.inbox = Inbox()
        recorded: UserMessageResult | None = None  # the message, once on disk
        ending = Ending.CUT  # until the loop returns: what it read was answered by nothing
        began = time.perf_counter()
        try:
            async with active.lock:
                recorded = await self._context(session, inbound)
                if sink is not None:  # a stream opens now: its facts came with the message
                    await sink.opened(recorded.agent, recorded.on_disconnect)
                with log_context(agent=recorded.agent or None):  # HTTP reads no info first
                    if recorded.duplicate and recorded.answered:  # what its turn recorded
                        result: TurnResult = await recorded_outcome(session, recorded.seq)
                    else:
                        result = await self._turn(session, recorded, active, sink, inbound)
                        if recorded.duplicate and isinstance(inbound, Incoming):  # cut turn's
                            result = await noting_interruption(session, recorded.seq, result)
                    ending = ending_of(result)
                    active.paused = ending is Ending.PAUSED
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # the waiters re-raise it; never "exception never retrieved"
            if isinstance(exc, StorageError) and recorded is not None:
                raise exc.after_recording(recorded.seq) from exc  # a retry would record it twice
            raise
        finally:
            inbox.close(ending)  # with the future, in one step: nothing is handed
            # over unread after, and what was steered in knows if it still needs a turn
            if self._metrics is not None and recorded is not None and recorded.agent:
                front_end = current().get("front_end", "other")  # bound by each front end
                self._metrics.turn(front_end, recorded.agent, time.perf_counter() - began)
        future.set_result(result)
        return result

    async def _context(
        self, session: SessionHandle, inbound: Incoming | Recorded
    ) -> UserMessageResult:
        """Record ``inbound`` (or prepare its turn) and what the turn starts from.

        A context ``accept`` kept for exactly this message is reused when the session took
        no write since (one round trip to the actor saved per chat turn).
        """
        if isinstance(inbound, Recorded):
            kept = self._lines.take_context(session.session_id, inbound.seq)
            if kept is not None and self._registry.unchanged_since(session.session_id, kept[1]):
                return kept[0]
        return await inbound.record(session, with_context=True)

    async def _turn(
        self,
        session: SessionHandle,
        recorded: UserMessageResult,
        active: Line,
        sink: TurnSink | None,
        inbound: Incoming | Recorded,
    ) -> TurnResult:
        messages = recorded.messages
        if recorded.pending_approval:
            await cancel_approval(session, recorded.pending_approval)
            self._lines.approvals_changed()
            messages = None  # the cancellation added results to the window
        if messages is None:
            messages = await session.messages()
        turn: list[Message] = []
        restate = inbound.content if isinstance(inbound, Recorded) else None
        if restate and needs_restating(messages, restate):
            turn.append(Message.user(restate))  # shown, not recorded (see ``answer``)
        return await self._driver.drive(
            session,
            recorded.agent,
            messages,
            turn,
            0,
            active.inbox,
            sink,
            extra_blocks=inbound.context_blocks,
            requester_id=inbound.sender_id,
            answers_seq=inbound.answers_seq if isinstance(inbound, Recorded) else None,
            memory=recorded.memory,
            chat=recorded.chat,
            tokens=(recorded.tokens_day, recorded.tokens_today),
            turn_seq=recorded.seq,
        )
