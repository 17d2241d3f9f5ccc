"""``BetweenTurns``: what the turn runner does to a session outside a turn.

Creating a session (for an agent, or the one of a chat), pinning, posting a scheduled
message, recording chatter and deliveries, ending and deleting: every write a front end makes
that is not a turn goes through here, each where it cannot land inside a turn's records (a
scheduled message waits for the running loop: ``Lines.between_turns``). Kept apart from
``runner`` (turns and their concurrency); ``TurnRunner`` is a ``BetweenTurns``.
"""

from __future__ import annotations

from collections.abc import Callable

from duragent.agents import Agent, AgentCatalog
from duragent.context.budget import BudgetSettings
from duragent.core.payloads import AssistantResponseData
from duragent.core.snapshot import DEFAULT_SILENT_BUFFER_CAP, SessionStatus
from duragent.session import NewSession, SessionRegistry, actor_message_limit
from duragent.turns.lines import Lines
from duragent.turns.pins import PinRooms, add_pin

__all__ = ["BetweenTurns"]


class BetweenTurns:
    """Session writes that are not turns (see module docstring)."""

    _registry: SessionRegistry
    _lines: Lines
    _agents: Callable[[], AgentCatalog]
    _pin_rooms: PinRooms

    def _new_session(
        self,
        agent: Agent,
        gateway: str | None,
        chat_id: str | None,
        chat_type: str | None = None,
    ) -> NewSession:
        window = agent.model.max_input_tokens or BudgetSettings.for_model(agent.model.name).window
        access = agent.spec.access
        return NewSession(
            agent=agent.name,
            on_disconnect=agent.spec.session.on_disconnect,
            gateway=gateway,
            gateway_chat_id=chat_id,
            gateway_chat_type=chat_type,
            message_limit=actor_message_limit(window),
            rollover=agent.spec.session.compaction,
            silent_cap=(
                access.groups.context_buffer.max_messages if access else DEFAULT_SILENT_BUFFER_CAP
            ),
        )

    async def start_session(
        self, agent_name: str, *, gateway: str | None = None, chat_id: str | None = None
    ) -> str:
        """Create a session for ``agent_name`` (raises AgentNotFoundError)."""
        agent = self._agents().get(agent_name)
        return await self._registry.create(self._new_session(agent, gateway, chat_id))

    async def session_for_chat(
        self, gateway: str, chat_id: str, agent_name: str, chat_type: str | None = None
    ) -> str:
        """The chat's session, created on first use (exactly one under concurrency).

        ``chat_type`` (``dm``, ``group``…) is kept with a new session, for recovery.
        """
        agent = self._agents().get(agent_name)
        return await self._registry.for_chat(
            (gateway, chat_id, agent_name), self._new_session(agent, gateway, chat_id, chat_type)
        )

    async def pin(self, session_id: str, text: str, *, kind: str, source: str) -> str:
        """Pin ``text`` in the session; ``PinRefusedError`` when its agent has no room for it."""
        agent = self._agents().get((await self._registry.info(session_id)).agent)
        session = self._registry.handle(session_id)
        return await add_pin(session, agent, self._pin_rooms, text, kind=kind, source=source)

    async def approval_decided(self, session_id: str) -> None:
        """Return once the session has no approval pending (at once when it has none).

        Woken by every decision and cancellation this runner records; a decision made
        elsewhere is seen within ``lines.DECISION_BACKSTOP_SECONDS``.
        """
        while (await self._registry.info(session_id)).pending_approval is not None:
            await self._lines.approval_change()

    async def post(
        self, session_id: str, text: str, *, key: str | None = None, again: bool = False
    ) -> tuple[int, bool]:
        """Add an assistant message nobody asked for (a scheduled message); (seq, duplicate).

        Written between turns (``Lines.between_turns``): never inside a running turn's
        records. It answers what the last turn answered, so it does not leave a person's
        message looking answered. ``key`` is kept as its ``message_id``, so that ``again``
        (a later attempt of the same write, whose caller may have been killed after it and
        before it noted it) finds it in the session, archive included, instead of saying it
        twice: ``duplicate``, nothing written. Only ``again`` reads the log: a first attempt
        costs no read.
        """
        async with self._lines.between_turns(session_id):
            session = self._registry.handle(session_id)
            if key is not None and again:
                for event in await session.events(include_archive=True):
                    if (
                        event.type == "assistant_response"
                        and AssistantResponseData.of(event.data).message_id == key
                    ):
                        return event.seq, True
            answered = (await session.info()).last_answered_seq
            seq = await session.add_assistant_response(text, message_id=key, answers_seq=answered)
            return seq, False

    async def record_unanswered(
        self,
        session_id: str,
        text: str,
        *,
        sender_id: str,
        sender_name: str | None,
        platform_message_id: str | None,
        silent: bool,
    ) -> int | None:
        """Record a message no turn answers: a group's chatter (``silent``) or a passive one.

        ``silent`` chatter goes to the context buffer (None when it was a duplicate); a
        passive user message joins the conversation without a turn.
        """
        session = self._registry.handle(session_id)
        if silent:
            return await session.add_silent_message(
                text,
                sender_id=sender_id,
                sender_name=sender_name,
                platform_message_id=platform_message_id,
            )
        result = await session.add_user_message(
            text,
            sender_id=sender_id,
            sender_name=sender_name,
            platform_message_id=platform_message_id,
            passive=True,  # owed no answer: recovery must not answer it after a restart
        )
        return result.seq

    async def record_failure(self, session_id: str, code: str, message: str) -> int:
        """Record that a turn ended without an answer (an ``error`` event); its seq.

        For a turn its front end gave up on (``turn_timeout``): the messages it was for are
        settled, so a restart does not answer them again after the person was told to.
        """
        async with self._lines.between_turns(session_id):
            return await self._registry.handle(session_id).record_error(code, message)

    async def record_delivery(
        self, session_id: str, reply_seq: int, target: str, *, parts: int | None = None
    ) -> None:
        """The reply ``reply_seq`` reached ``target`` (idempotent).

        Not waited for when the session's actor is live: the person has the message, the
        record only keeps a restart from sending it again, and the actor writes it before
        anything asked after it (the chat's next turn included). A failure is the actor's
        to log; this process never sends the reply again either way (``Delivery``).

        ``parts``: only the reply's first ``parts`` parts reached it (a reply sent part by
        part). Waited for, durable: the next part is sent only once a crash would not send
        this one again.
        """
        session = self._registry.handle(session_id)
        await session.record_delivery(reply_seq, target, parts=parts, wait=parts is not None)

    async def unpin(self, session_id: str, pin_id: str) -> bool:
        """Remove a pin; whether it was there."""
        return await self._registry.handle(session_id).unpin(pin_id)

    async def end_chat(self, key: tuple[str, str, str]) -> str | None:
        """Complete the chat's session (``/reset``); its id, or None when it had none."""
        ended = await self._registry.end_chat(key)
        self._lines.approvals_changed()
        return ended

    async def complete(self, session_id: str) -> None:
        """Complete the session (files kept)."""
        await self._registry.complete(session_id)
        self._lines.approvals_changed()

    async def delete(self, session_id: str) -> None:
        """Stop the session and delete its files."""
        await self._registry.delete(session_id)
        self._lines.approvals_changed()

    async def interrupted(self, session_id: str, partial: str) -> None:
        """A streaming client left (on_disconnect: pause): keep what was said, pause."""
        session = self._registry.handle(session_id)
        if partial.strip():
            await session.add_assistant_response(partial, durable=True)
        await session.set_status(SessionStatus.PAUSED)

    async def set_status(self, session_id: str, status: SessionStatus) -> None:
        """Record a status change (durable + snapshot)."""
        await self._registry.handle(session_id).set_status(status)
