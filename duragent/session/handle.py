"""A typed handle on one session: every operation front ends and turns perform on it.

Under it is the actor boundary, ``SessionRegistry.call(sid, op, *args, **kwargs)``: ``op`` is
the actor's method itself, an ``ops.Op`` made by ``@op`` in ``operations`` (``SessionOps.info``,
``SessionOps.add_user_message``), which the request carries to the actor's thread and the
actor runs; its decorator declares whether the registry may retry it. ``call`` is typed with
the op's own parameters and result (``ParamSpec``), so mypy checks each method here against
the operation it forwards to: a wrong op, a misspelt or missing argument or a wrong result
type is a type error. Nothing above this module uses ``call``: each operation is a method here
with typed arguments, a typed result and its own docstring.

A handle is two references (the registry, the id): cheap to make per turn or per request,
and each method is one ``await`` over ``SessionRegistry.call`` (no extra task, thread hop or
allocation beyond the call's own arguments).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from duragent.core.approval import ApprovalDecision, PendingApproval
from duragent.core.attachments import Attachment
from duragent.core.events import Event
from duragent.core.messages import Message, ToolCall, Usage
from duragent.core.payloads import EventType, UserMessageData
from duragent.core.snapshot import SessionStatus
from duragent.session.memory_ops import MemoryView, SummaryRecorded
from duragent.session.operations import SessionInfo, SessionOps, UserMessageResult
from duragent.tools.send_file import ReplyFile

if TYPE_CHECKING:
    from duragent.session.registry import SessionRegistry

__all__ = ["SessionHandle"]


class SessionHandle:
    """The operations of one session (see module docstring); get one from ``registry.handle``."""

    __slots__ = ("_registry", "session_id")

    def __init__(self, registry: SessionRegistry, session_id: str) -> None:
        self._registry = registry
        self.session_id = session_id

    # --- reads ------------------------------------------------------------------------------

    async def info(self) -> SessionInfo:
        """A summary of the session (status, agent, pending approval, counts)."""
        return await self._registry.call(self.session_id, SessionOps.info)

    async def messages(self) -> list[Message]:
        """The Layer 1 window of messages."""
        return await self._registry.call(self.session_id, SessionOps.messages)

    async def paused_turn(
        self, call_id: str, turn_seq: int | None, through_seq: int | None = None
    ) -> tuple[list[Message], list[Message]]:
        """(history, turn) of the turn paused on ``call_id``, to go on with once decided.

        When a summary took the turn's message out of the window while it ran, that message
        is read back from the log and shown at the start of the turn (not recorded again).
        """
        history, turn, whole = await self._registry.call(
            self.session_id,
            SessionOps.paused_turn,
            call_id=call_id,
            turn_seq=turn_seq,
            through_seq=through_seq,
        )
        if not whole and turn_seq is not None:
            asked = await self.events(after_seq=turn_seq - 1, include_archive=True)
            if asked and asked[0].seq == turn_seq and asked[0].type == EventType.USER_MESSAGE:
                turn.insert(0, Message.user(UserMessageData.of(asked[0].data).content))
        return history, turn

    async def events(self, *, after_seq: int = 0, include_archive: bool = False) -> list[Event]:
        """Persisted events after ``after_seq`` (archive first when asked), for history reads."""
        return await self._registry.call(
            self.session_id, SessionOps.events, after_seq=after_seq, include_archive=include_archive
        )

    # --- a turn's records -------------------------------------------------------------------

    async def add_user_message(
        self,
        content: str,
        *,
        sender_id: str | None = None,
        sender_name: str | None = None,
        platform_message_id: str | None = None,
        with_context: bool = False,
        passive: bool = False,
        agent: str | None = None,
        attachments: Sequence[Attachment] = (),
    ) -> UserMessageResult:
        """Durably record an inbound message (a redelivered platform id is not re-added).

        ``with_context``: also return what a turn starts from (one round trip, not three).
        ``passive``: a message no turn answers (read by later turns, owed no answer).
        ``agent``: refuse (``SessionAgentMismatchError``) a session of another agent.
        ``attachments``: what it carried, in the same event; their bytes stored first
        (``store.AttachmentStorage.put``), else ``AttachmentNotFoundError``, nothing written.
        """
        return await self._registry.call(
            self.session_id,
            SessionOps.add_user_message,
            content=content,
            sender_id=sender_id,
            sender_name=sender_name,
            platform_message_id=platform_message_id,
            with_context=with_context,
            passive=passive,
            agent=agent,
            attachments=attachments,
        )

    async def turn_context(self, seq: int) -> UserMessageResult:
        """Prepare a turn for messages already recorded (up to ``seq``); what it starts from."""
        return await self._registry.call(self.session_id, SessionOps.turn_context, seq=seq)

    async def add_assistant_response(
        self,
        content: str,
        *,
        tool_calls: Sequence[ToolCall] = (),
        usage: Usage | None = None,
        message_id: str | None = None,
        budget: dict[str, Any] | None = None,
        durable: bool | None = None,
        answers_seq: int | None = None,
        attachments: Sequence[ReplyFile] = (),
    ) -> int:
        """Record the model's answer (a final reply is durable by default); its seq.

        ``answers_seq``: the newest message a final reply answers, when not all before it.
        ``attachments``: the files a final reply carries (``send_file``), stored first.
        """
        return await self._registry.call(
            self.session_id,
            SessionOps.add_assistant_response,
            content=content,
            tool_calls=tool_calls,
            usage=usage,
            message_id=message_id,
            budget=budget,
            durable=durable,
            answers_seq=answers_seq,
            attachments=attachments,
        )

    async def add_tool_result(self, call_id: str, success: bool, content: str) -> int:
        """Record a tool's result (batched: written at the next durable record or flush)."""
        return await self._registry.call(
            self.session_id,
            SessionOps.add_tool_result,
            call_id=call_id,
            success=success,
            content=content,
        )

    async def add_tools_skipped(self, call_ids: Sequence[str], reason: str) -> int:
        """Record calls that were not run (batched)."""
        return await self._registry.call(
            self.session_id, SessionOps.add_tools_skipped, call_ids=call_ids, reason=reason
        )

    async def add_steering(self, content: str) -> int:
        """Record an ``after_tool`` hook's steering text (batched, like tool results)."""
        return await self._registry.call(self.session_id, SessionOps.add_steering, content=content)

    async def close_open_calls(self, content: str) -> int:
        """Give every call a cut-short turn left open the result ``content``, written."""
        return await self._registry.call(
            self.session_id, SessionOps.close_open_calls, content=content
        )

    async def record_error(self, code: str, message: str) -> int:
        """Durably record an error the operator should see."""
        return await self._registry.call(
            self.session_id, SessionOps.record_error, code=code, message=message
        )

    async def record_delivery(
        self, reply_seq: int, target: str, *, parts: int | None = None, wait: bool = True
    ) -> int | None:
        """Durably record that reply ``reply_seq`` reached ``target`` (None: already recorded).

        ``parts``: only its first ``parts`` parts did (None: all of it). ``SessionInfo``
        reads it back (``last_delivered_seq``, ``parts_delivered``), after a restart too.
        ``wait=False``: sent to the live actor without waiting for the write (None; one
        hand-off, not an ask's two), which runs it before anything asked after it; asked as
        usual when the actor is not live.
        """
        if not wait and self._registry.tell(
            self.session_id,
            SessionOps.record_delivery,
            reply_seq=reply_seq,
            target=target,
            parts=parts,
        ):
            return None
        return await self._registry.call(
            self.session_id,
            SessionOps.record_delivery,
            reply_seq=reply_seq,
            target=target,
            parts=parts,
        )

    # --- the context buffer (group chatter the agent only listens to) ----------------------

    async def add_silent_message(
        self,
        content: str,
        *,
        sender_id: str,
        sender_name: str | None = None,
        platform_message_id: str | None = None,
    ) -> int | None:
        """Durably keep ``content`` in the context buffer, never in the model's history.

        Its seq, or None when the buffer already holds ``platform_message_id`` (redelivered).
        """
        return await self._registry.call(
            self.session_id,
            SessionOps.add_silent_message,
            content=content,
            sender_id=sender_id,
            sender_name=sender_name,
            platform_message_id=platform_message_id,
        )

    async def recent_silent(self, max_messages: int, max_age_hours: float) -> list[str]:
        """The newest buffered texts (≤ ``max_messages``, ≤ ``max_age_hours`` old), oldest first."""
        return await self._registry.call(
            self.session_id,
            SessionOps.recent_silent,
            max_messages=max_messages,
            max_age_hours=max_age_hours,
        )

    # --- status and approvals ---------------------------------------------------------------

    async def set_status(self, status: SessionStatus) -> bool:
        """Change the status (durable + snapshot); False when it already was ``status``."""
        return await self._registry.call(self.session_id, SessionOps.set_status, status=status)

    async def set_pending_approval(self, approval: PendingApproval) -> int:
        """Durably record that ``approval`` waits for a decision (snapshot included)."""
        return await self._registry.call(
            self.session_id, SessionOps.set_pending_approval, approval=approval
        )

    async def record_decision(self, call_id: str, decision: ApprovalDecision) -> int:
        """Record the decision on the pending approval and clear it (durable + snapshot)."""
        return await self._registry.call(
            self.session_id, SessionOps.resolve_pending_approval, call_id=call_id, decision=decision
        )

    # --- the summaries tier (session.memory) -------------------------------------------------

    async def memory(self) -> MemoryView:
        """The current summary, pinned sections and original task."""
        return await self._registry.call(self.session_id, SessionOps.memory)

    async def record_summary(
        self,
        summary: str,
        *,
        last: Message,
        tokens_before: int,
        tokens_after: int,
        model: str,
        usage: Usage | None = None,
        extractive: bool = False,
    ) -> SummaryRecorded | None:
        """Durably replace the window up to ``last`` with ``summary`` (None: window moved on)."""
        return await self._registry.call(
            self.session_id,
            SessionOps.record_summary,
            summary=summary,
            last=last,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            model=model,
            usage=usage,
            extractive=extractive,
        )

    async def pin(self, text: str, *, kind: str = "note", source: str = "user") -> str:
        """Durably pin ``text`` (sent with every request, never summarised); its id."""
        return await self._registry.call(
            self.session_id, SessionOps.pin, text=text, kind=kind, source=source
        )

    async def unpin(self, pin_id: str) -> bool:
        """Durably remove a pin; False when there was none with that id."""
        return await self._registry.call(self.session_id, SessionOps.unpin, pin_id=pin_id)

    # --- writes -----------------------------------------------------------------------------

    async def flush(self) -> int:
        """Write everything queued; the last durable seq."""
        return await self._registry.call(self.session_id, SessionOps.flush)

    async def snapshot(self) -> None:
        """Flush and write a snapshot now."""
        await self._registry.call(self.session_id, SessionOps.snapshot)
