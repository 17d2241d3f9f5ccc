"""Notices: news for a session that no person typed (a background job ended), answered there.

``SessionNotices.notify`` adds the notice to the session as a user message and has the agent
answer it, through the one turn runner, exactly as a chat message would be:

- recorded with ``TurnRunner.accept`` under the notice's id (its platform message id), so a
  notice reported twice (again after a restart) is recorded once;
- a loop running for the session is *steered*: it reads the notice at its next boundary and
  its reply answers it (the caller that started that turn delivers the reply). If that loop
  ended without reading it, the notice gets a turn of its own;
- otherwise a new turn runs (``TurnRunner.answer``) once the session is idle. Its reply is
  delivered through the session's front end: for a chat session, its gateway's
  ``OutboundPort`` through ``Delivery`` (each reply once, an approval asked with buttons);
  for an HTTP or CLI session the reply is in the session's history and event stream;
- a session waiting on an approval is left as it is: the notice is recorded only once the
  decision is made (recorded before, it would sit between the paused call and its result,
  or cancel the person's decision as a new message does). A job's ``notified`` stays false
  meanwhile, so a restart reports it again.

After a restart, a notice found recorded and not answered is answered here only for a
session without a chat: a chat's own recovery (``recover_chats``, run when its gateway
starts, before this) answers what it finds unanswered.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from duragent.core.ids import new_ulid
from duragent.errors import AgentNotFoundError, NotFoundError
from duragent.frontkit.delivery import Deliveries
from duragent.frontkit.outbound import ChatRef, OutboundPort
from duragent.tools.processes import ProcessMeta
from duragent.turns import TurnResult, TurnRunner

__all__ = ["ProcessNotices", "SessionNotices"]

log = logging.getLogger(__name__)


class SessionNotices:
    """Runs a turn for a notice in its session (see module docstring)."""

    def __init__(self, turns: TurnRunner, outbound: Callable[[str], OutboundPort | None]) -> None:
        self._turns = turns
        self._deliveries = Deliveries(turns, outbound, agents=turns.agents)

    async def notify(self, session_id: str, text: str, *, notice_id: str) -> TurnResult | None:
        """Add ``text`` to the session and have it answered; the result of a turn it ran.

        None when no turn of its own ran: steered into a running turn that read it, a
        duplicate, or an approval pending. Raises what the turn runner raises (the session
        does not exist, storage failed): the caller reports the notice again later.
        """
        # Recorded now, the notice would sit between the paused call and its result, or
        # cancel a person's pending decision: it waits until the decision is made.
        await self._turns.approval_decided(session_id)
        info = await self._turns.sessions.info(session_id)
        chat = None
        if info.gateway and info.gateway_chat_id:
            chat = ChatRef(info.gateway, info.gateway_chat_id)
        accepted = await self._turns.accept(session_id, text, platform_message_id=notice_id)
        if accepted.duplicate and (accepted.answered or chat is not None):
            return None  # answered, or the chat's recovery answers it
        if accepted.steered is not None:  # the one steering rule (``turns.steering``)
            await self._turns.loop_ended(session_id)
            if not accepted.steered.needs_own_turn:
                return None  # read by a turn that answered, or kept by one that paused
        elif (await self._turns.sessions.info(session_id)).pending_approval is not None:
            log.info("session %s: notice %s is left for the paused turn", session_id, notice_id)
            return None
        result = await self._turns.answer(session_id, accepted.seq, text)
        if chat is not None:
            delivery = self._deliveries.get(chat.gateway)
            if delivery is None:
                log.warning(
                    "session %s: gateway '%s' is not running: the reply to notice %s is in "
                    "the session, not sent",
                    session_id,
                    chat.gateway,
                    notice_id,
                )
            else:
                await delivery.deliver(chat, result)
        return result


class ProcessNotices:
    """The runtime's ``ProcessEvents``: a background job's news, answered in its session.

    When a job ends, the schedules linked to it are cancelled first (``cancel_linked``, the
    scheduler's, when it runs), so a watch schedule never fires after the job is over; then
    the completion message is a notice in the session that spawned the job. A session that
    no longer exists is logged and the job counts as reported (nobody is left to tell); an
    agent not loaded now is not (the next start reports it again).
    """

    def __init__(
        self,
        notices: SessionNotices,
        cancel_linked: Callable[[str, str], object] | None = None,
    ) -> None:
        self._notices = notices
        self._cancel_linked = cancel_linked

    async def process_ended(self, meta: ProcessMeta, message: str) -> None:
        """Cancel linked schedules, then have the session answer the completion message."""
        if self._cancel_linked is not None:
            try:
                self._cancel_linked(meta.handle, meta.agent)
            except Exception:
                log.exception("process %s: its linked schedules were not cancelled", meta.handle)
        await self._notify(meta, message, f"process:{meta.handle}:ended")

    async def screen_halted(self, meta: ProcessMeta, message: str) -> None:
        """Have the session answer the watch's message (each halt is a notice of its own)."""
        await self._notify(meta, message, f"process:{meta.handle}:halted:{new_ulid()}")

    async def _notify(self, meta: ProcessMeta, message: str, notice_id: str) -> None:
        try:
            await self._notices.notify(meta.session_id, message, notice_id=notice_id)
        except AgentNotFoundError:
            raise  # the agent may be back after a fix: reported again at the next start
        except NotFoundError as exc:
            log.warning("process %s: its session cannot be told: %s", meta.handle, exc)
