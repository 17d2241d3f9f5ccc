"""Driving one turn's loop to its end: a new turn's, or the one an approval paused.

``TurnRunner`` decides *when* a turn runs (one loop per session, steering, waiting); this
module is *what* runs once it does: build the loop's context, run it, and leave a durable
trace whichever way it ends (a reply, a pending approval, a recorded failure, or a turn cut
short by a cancellation or a bug). The approval path lives here too: it resolves the pending
call, runs it, and drives the rest of the turn the same way.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from duragent.agents import AgentCatalog
from duragent.context.budget import ContextOverflowError
from duragent.core.approval import ApprovalDecision, PendingApproval
from duragent.core.caller import ChatRef
from duragent.core.messages import Message, Role
from duragent.core.snapshot import SessionStatus
from duragent.errors import DuragentError, LLMError
from duragent.session import SessionHandle
from duragent.session.memory_ops import MemoryView
from duragent.tools.policy_files import PolicyError, save_allow_always
from duragent.turns.context import UNKNOWN_CHAT, ContextFactory, UnknownChat
from duragent.turns.endings import close_cut_short_turn, record_failed_turn
from duragent.turns.errors import ApprovalError, ApprovalMismatchError, NoPendingApprovalError
from duragent.turns.inbox import Inbox
from duragent.turns.loop import LoopContext, resume_approved, run_loop
from duragent.turns.result import AwaitingApproval, Complete, Failed, outcome_result
from duragent.turns.sink import TurnSink

__all__ = ["Resumed", "TurnDriver", "cancel_approval"]

log = logging.getLogger(__name__)

Resumed = Complete | AwaitingApproval | Failed
"""What a loop that ran returns (``approve`` never answers ``Duplicate``)."""


class TurnDriver:
    """Runs a turn's loop and closes it, whatever way it ends (see module docstring)."""

    def __init__(self, contexts: ContextFactory, agents: Callable[[], AgentCatalog]) -> None:
        self._contexts = contexts
        self._agents = agents

    async def drive(
        self,
        session: SessionHandle,
        agent_name: str,
        history: list[Message],
        turn: list[Message],
        done: int,
        inbox: Inbox,
        sink: TurnSink | None,
        ctx: LoopContext | None = None,
        *,
        extra_blocks: Sequence[str] = (),
        requester_id: str | None = None,
        answers_seq: int | None = None,
        memory: MemoryView | None = None,
        chat: ChatRef | UnknownChat | None = UNKNOWN_CHAT,
        tokens: tuple[str, int] | None = None,
        turn_seq: int | None = None,
    ) -> Resumed:
        """Run the loop from ``turn`` (``done`` tool iterations already made) to its end.

        A model or context failure is recorded and answered (``Failed``); anything else
        (a cancellation, a bug) closes the turn on disk and propagates.
        """
        try:
            if ctx is None:
                ctx = await self._contexts.build(
                    session.session_id,
                    self._agents().get(agent_name),
                    inbox,
                    sink,
                    extra_blocks=extra_blocks,
                    requester_id=requester_id,
                    answers_seq=answers_seq,
                    memory=memory,
                    chat=chat,
                    tokens=tokens,
                    turn_seq=turn_seq,
                )
            outcome = await run_loop(ctx, history, turn, done)
        except (LLMError, ContextOverflowError, DuragentError) as exc:
            try:
                await close_cut_short_turn(session, exc)
                return await record_failed_turn(session, exc)
            except BaseException as again:
                await close_cut_short_turn(session, again)
                raise
        except BaseException as exc:
            await close_cut_short_turn(session, exc)  # cancelled or a bug: keep the results
            raise
        # Both ways the loop ends (a final reply, a pending approval) are durable records,
        # which write any queued tool results first: nothing is left to flush.
        return outcome_result(session.session_id, outcome)

    async def approve(
        self,
        session: SessionHandle,
        call_id: str,
        decision: ApprovalDecision,
        sink: TurnSink | None,
        on_recorded: Callable[[int], None],
    ) -> Resumed:
        """Resolve the pending approval of ``call_id``, run (or skip) the call, go on.

        ``on_recorded`` gets the decision's seq once it is on disk (a caller must not send
        it again after that). Raises ``NoPendingApprovalError`` / ``ApprovalMismatchError``.
        """
        session_id = session.session_id
        info = await session.info()
        pending = info.pending_approval
        if not pending:
            raise NoPendingApprovalError()
        if pending.call_id != call_id:
            raise ApprovalMismatchError(pending.call_id, call_id)
        agent = self._agents().get(info.agent)
        # Before resolving: if the model cannot be reached (no key, say) the approval stays
        # pending and can be given again once that is fixed. The loop is not one messages are
        # steered into (the runner does not claim it): an inbox nobody puts into.
        # its reply answers the turn's own message (and those handed to it before it asked:
        # ``through_seq``) only: people who wrote after (while it waited, or while the
        # approved call runs: they are not known yet) get turns of their own, after a
        # restart too
        turn_seq = pending.turn_seq
        through = pending.through_seq if pending.through_seq is not None else turn_seq
        ctx = await self._contexts.build(
            session_id,
            agent,
            Inbox(),
            sink,
            requester_id=pending.requester_id,
            answers_seq=through,
            chat=info.chat,
            tokens=(info.tokens_day, info.tokens_today),
            turn_seq=turn_seq,
        )
        if decision is ApprovalDecision.ALLOW_ALWAYS:
            # Before resolving too: a pattern that cannot be saved (and read back) leaves the
            # file as it was and the approval pending, for allow_once or deny.
            try:
                pattern = await asyncio.to_thread(
                    save_allow_always, agent.directory, pending.tool_type, pending.command
                )
            except PolicyError as exc:
                raise ApprovalError(str(exc)) from exc
            log.info("session %s: saved allow-always pattern %r", session_id, pattern)
        on_recorded(await session.record_decision(call_id, decision))
        try:
            await resume_approved(ctx, pending, decision)
        except BaseException as exc:  # cancelled while the approved call ran
            await close_cut_short_turn(session, exc)
            raise
        await session.set_status(SessionStatus.ACTIVE)
        history, turn = await session.paused_turn(pending.call_id, pending.turn_seq, through)
        done = sum(1 for m in turn if m.role is Role.ASSISTANT and m.tool_calls)
        return await self.drive(session, info.agent, history, turn, done, Inbox(), sink, ctx)


async def cancel_approval(session: SessionHandle, pending: PendingApproval) -> None:
    """A new message arrived while a call waited: skip the call, record ``deny``."""
    await session.add_tools_skipped(
        [pending.call_id], "approval cancelled: a new message arrived first"
    )
    await session.record_decision(pending.call_id, ApprovalDecision.DENY)
    await session.set_status(SessionStatus.ACTIVE)
