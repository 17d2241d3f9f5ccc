"""Running a payload: a message or a task, in the destination chat's session, delivered once.

- ``message``: the text is recorded in the chat's session as the agent's message (so the
  conversation knows what was said; it answers nothing the person wrote, ``answers_seq``
  stays where it was) and then delivered through the kit's ``Delivery`` to the gateway's
  ``OutboundPort``. Recording first means a crash between the two leaves a reply the
  gateway's own recovery (``frontkit.recover_chats``) delivers at its start, once. It is
  written under the key ``<schedule>@<due ms>`` (its ``message_id``): a later attempt for the
  same due time finds it (``BetweenTurns.post``) instead of writing it twice — a kill after
  the write and before the run log's ``recorded`` line runs the due time again
  (``catch_up.interrupted``), and that attempt records the message found and leaves it to
  the chat's recovery. One this process wrote and failed to deliver is delivered again.
- ``task``: one turn through the turn runner, exactly as a chat message: ``accept`` records
  the reference's ``[Scheduled Task]`` prompt with the platform id ``<schedule>@<due ms>``
  (so a retry never records it twice), ``answer`` runs the loop, and ``Delivery`` sends the
  reply — or, when a tool call needs approval, asks with buttons (``Delivery.ask``). That
  pending approval is the chat session's own, persisted: a button press after a restart
  completes it through the gateway's approval handling like any other.
- no destination: the payload runs in a new session of the agent (its id is in the run log),
  which HTTP reads and streams like any other session; nothing is sent anywhere.

A destination whose gateway is not running fails the attempt before anything is recorded,
so a retry is safe.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from duragent.cluster import OwnerRelay, RelayFailedError
from duragent.errors import AgentNotFoundError
from duragent.frontkit import ChatRef, Deliveries, Delivery, OutboundPort
from duragent.observability.logctx import log_context, new_turn_id
from duragent.scheduler.model import MessagePayload, Schedule
from duragent.scheduler.relayed import to_wire
from duragent.scheduler.runs import to_ms
from duragent.scheduler.service import Record, RunReport
from duragent.store import LeaseHeldError
from duragent.turns import AwaitingApproval, Complete, Failed, TurnRunner

__all__ = ["TASK_PROMPT", "ChatPayloads"]

TASK_PROMPT = (
    "[Scheduled Task]\n\n{task}\n\n(This is an automated task. Send the result to this chat.)"
)
"""The reference's wording of a scheduled task's user message."""


class ChatPayloads:
    """The scheduler's ``PayloadRunner`` in the server (see module docstring)."""

    def __init__(self, turns: TurnRunner, outbound: Callable[[str], OutboundPort | None]) -> None:
        self._turns = turns
        self._deliveries = Deliveries(turns, outbound, agents=turns.agents)
        self._unsent: set[str] = set()
        """Messages this process wrote and has not delivered (yet): a retry delivers them."""
        self.task_sessions: set[str] = set()
        """Sessions running a scheduled task now: they are offered no ``schedule`` tool."""
        self.relay: OwnerRelay | None = None
        """With several nodes: how an attempt reaches the node serving its chat (``relayed``)."""

    async def run(
        self, schedule: Schedule, due: datetime, record: Record, attempt: int = 1
    ) -> RunReport:
        """Run ``schedule``'s payload for ``due`` where its chat's session lives.

        Here, or handed to the node serving that chat (``relayed``); module docstring.
        """
        if self.relay is None:
            return await self._here(schedule, due, record, attempt)
        reports: list[RunReport] = []

        async def here() -> None:  # LeaseHeldError: the relay hands it to the owner
            reports.append(await self._here(schedule, due, record, attempt))

        body = to_wire(schedule.id, to_ms(due), attempt)
        try:
            await self.relay.serve(f"schedule {schedule.id}", body, here)
        except (RelayFailedError, LeaseHeldError) as exc:
            return RunReport(error=f"the node serving the chat did not run it: {exc}")
        return reports[-1] if reports else RunReport()  # run by the node serving the chat

    async def _here(
        self, schedule: Schedule, due: datetime, record: Record, attempt: int
    ) -> RunReport:
        try:
            return await self._run(schedule, due, record, attempt)
        except AgentNotFoundError:
            return RunReport(error=f"agent '{schedule.agent}' is not loaded: nothing ran")

    async def _run(
        self, schedule: Schedule, due: datetime, record: Record, attempt: int
    ) -> RunReport:
        dest = schedule.destination
        delivery = None
        if dest is not None:
            delivery = self._deliveries.get(dest.gateway)
            if delivery is None:
                return RunReport(error=f"gateway '{dest.gateway}' is not running: nothing sent")
            session_id = await self._turns.session_for_chat(
                dest.gateway, dest.chat_id, schedule.agent
            )
        else:
            session_id = await self._turns.start_session(schedule.agent)
        chat = ChatRef(dest.gateway, dest.chat_id) if dest is not None else None
        key = f"{schedule.id}@{to_ms(due)}"  # the same on every attempt for this due time
        if isinstance(schedule.payload, MessagePayload):
            text = schedule.payload.message
            return await self._message(text, key, attempt, session_id, chat, delivery, record)
        prompt = TASK_PROMPT.format(task=schedule.payload.task)
        if schedule.process_handle:  # as the reference: the task knows which job it watches
            prompt += f"\n\nLinked process handle: {schedule.process_handle}"
        return await self._task(prompt, key, session_id, chat, delivery, record)

    async def _message(
        self,
        text: str,
        key: str,
        attempt: int,
        session_id: str,
        chat: ChatRef | None,
        delivery: Delivery | None,
        record: Record,
    ) -> RunReport:
        # between turns, never inside one; a later attempt finds an earlier one's write
        seq, duplicate = await self._turns.post(session_id, text, key=key, again=attempt > 1)
        await record(session_id, seq)
        if duplicate and key not in self._unsent:  # an earlier process's: its chat recovers it
            return RunReport(session_id=session_id)
        if chat is not None and delivery is not None:
            self._unsent.add(key)
            await delivery.deliver(
                chat, Complete(session_id=session_id, content=text, reply_seq=seq)
            )
        self._unsent.discard(key)
        return RunReport(session_id=session_id)

    async def _task(
        self,
        prompt: str,
        platform_id: str,
        session_id: str,
        chat: ChatRef | None,
        delivery: Delivery | None,
        record: Record,
    ) -> RunReport:
        accepted = await self._turns.accept(
            session_id, prompt, platform_message_id=platform_id, steer=False
        )
        await record(session_id, accepted.seq)
        if accepted.duplicate:  # recorded by an earlier attempt: the chat's recovery owns it
            return RunReport(session_id=session_id)
        self.task_sessions.add(session_id)
        with log_context(session_id=session_id, front_end="scheduler", turn_id=new_turn_id()):
            try:
                result = await self._turns.answer(session_id, accepted.seq, prompt)
            finally:
                self.task_sessions.discard(session_id)
            if chat is not None and delivery is not None:
                await delivery.deliver(chat, result)
        match result:
            case Failed(content=text):
                return RunReport(error=text, session_id=session_id)
            case AwaitingApproval(command=command):
                del command  # asked in the chat; the run itself is done
        return RunReport(session_id=session_id)
