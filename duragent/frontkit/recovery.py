"""What a crash left unfinished in a gateway's chats, finished once at start.

Two gaps a process can die in, and what closes each (the gateway awaits ``recover_chats``
before it takes new updates, so recovered turns come first in each chat's line):

- **A reply written but not delivered** (killed between the reply's fsync and the platform
  accepting it, or between that and the ``delivery`` record). Every final reply after
  ``last_delivered_seq`` is sent through ``Delivery``, in order, as a reply to the user
  message before it, with the files it carries (``send_file``'s), and recorded. At least
  once, at most once more per crash: a crash after the platform accepted the message and
  before the record is indistinguishable from one before (no platform lets a send and a
  local fsync be one step). Running recovery twice sends nothing the second time.
- **An approval asked but never shown** (killed between the ``approval_required`` event and
  the prompt reaching the chat): asked again, with its buttons (``Delivery.ask`` records it
  once sent); in a group also when others wrote after it (their turns wait for it). A
  failure whose notice was never recorded as delivered is told again (the ``error`` event's
  text, at least once, as a reply): the turn is not run again.
- **A turn an approval let go on, never finished** (killed after the decision, while the
  approved call or the model's next step ran): the approved call was recorded as
  interrupted when the session loaded (it never runs twice), and the message that started
  the turn gets a turn again through the chat queue (``ChatProgress.turn_unfinished``),
  shown to the model again after the interrupted call, as any message a crash left
  unanswered: the model may call the tool again, which asks for approval again.
- **A message recorded but never answered** (killed between accepting the message and its
  reply, or the turn was cut short at shutdown). A user message after the last reply,
  failure or approval request (``ChatProgress.awaits_answer``) gets its turn through the
  chat queue (``SessionQueues.resume``), which delivers the reply. A pending approval asked
  after the message is not "unanswered": it waits for a button. A turn that failed (its
  ``error`` event) was answered with the failure and is not run again.

A reply that was streaming into the chat (``preview``) left its preview message there, and
its record (``preview_store``): handed to ``Delivery`` with the reply it showed, which takes
its place, or deleted first when no reply was written (the turn runs again, or it failed).

Cheap for thousands of chats: the gateway's sessions come from the chat index (no reads),
and each one's standing from its snapshot header and the last line of its event log
(``SessionQueries.progress``); only sessions with something to do, or whose log went on
after their snapshot, are loaded. A session of a chat that was reset (``/reset`` maps the
chat to a new session) is not looked at.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from duragent.agents.roles import DM_CHAT_TYPES
from duragent.agents.spec import ContextBufferSpec, QueueSpec
from duragent.core.events import Event
from duragent.core.payloads import (
    ApprovalRequiredData,
    AssistantResponseData,
    ErrorData,
    EventType,
    UserMessageData,
)
from duragent.frontkit.delivery import Delivery
from duragent.frontkit.outbound import ChatRef
from duragent.frontkit.preview import ReplyStream
from duragent.frontkit.queue import SessionQueues
from duragent.store import LeaseHeldError
from duragent.tools.send_file import ReplyFile
from duragent.turns import ChatProgress, Complete, SessionQueries, apology_for

__all__ = ["ChatSettings", "RecoveryReport", "default_settings", "recover_chats"]

log = logging.getLogger(__name__)

CONCURRENCY = 8  # sessions examined at once (header reads in threads, loads in actors)


@dataclass(slots=True)
class RecoveryReport:
    """What a recovery found and did."""

    checked: int = 0
    delivered: int = 0
    """Sessions whose undelivered replies were sent."""
    resumed: int = 0
    """Sessions whose unanswered messages were handed to the chat queue."""
    failed: int = 0
    """Sessions not examined or finished (logged; tried again next start, or next sweep)."""
    failed_sessions: set[str] = field(default_factory=set)


ChatSettings = Callable[[str, str, str | None], tuple[QueueSpec, ContextBufferSpec | None]]
"""``(agent, chat_id, chat_type)`` → the chat's queue rules and, for a group whose agent
answers mentions, the context buffer its turns show (what ``ChatFront`` would have passed).
``chat_type`` is what the platform said when the session began (None: not recorded)."""


def default_settings(
    _agent: str, _chat_id: str, _chat_type: str | None
) -> tuple[QueueSpec, ContextBufferSpec | None]:
    """A DM's defaults: batch queue, no group context."""
    return QueueSpec(), None


async def recover_chats(
    gateway: str,
    sessions: SessionQueries,
    delivery: Delivery,
    queues: SessionQueues,
    *,
    settings: ChatSettings = default_settings,
    concurrency: int = CONCURRENCY,
    chats: list[tuple[str, str]] | None = None,
) -> RecoveryReport:
    """Finish what a crash left: deliver, ask again, answer (see module docstring).

    ``chats``: ``(chat_id, session_id)`` to look at (default: every chat of ``gateway``).
    """
    report = RecoveryReport()
    limit = asyncio.Semaphore(concurrency)
    if chats is None:
        chats = sessions.chat_sessions(gateway)
    previews = await _previews_left(gateway, delivery, {sid for _, sid in chats})

    async def one(chat_id: str, session_id: str) -> None:
        async with limit:
            try:
                await _recover(
                    ChatRef(gateway, chat_id),
                    session_id,
                    _Parts(sessions, delivery, queues, settings),
                    report,
                    previews.get(session_id),
                )
            except LeaseHeldError as exc:  # a live node took it meanwhile: that node finishes it
                log.info("%s: session %s is node %s's now", gateway, session_id, exc.owner)
            except Exception as exc:  # one broken session must not stop the others
                report.failed += 1
                report.failed_sessions.add(session_id)
                log.error("%s: recovering session %s failed: %s", gateway, session_id, exc)

    report.checked = len(chats)
    await asyncio.gather(*(one(chat_id, sid) for chat_id, sid in chats))
    if report.delivered or report.resumed or report.failed:
        log.info(
            "%s: recovery: %d session(s) checked, %d with replies delivered, %d resumed, %d failed",
            gateway,
            report.checked,
            report.delivered,
            report.resumed,
            report.failed,
        )
    return report


@dataclass(frozen=True, slots=True)
class _Parts:
    sessions: SessionQueries
    delivery: Delivery
    queues: SessionQueues
    settings: ChatSettings


async def _previews_left(
    gateway: str, delivery: Delivery, sessions: set[str]
) -> dict[str, ReplyStream]:
    """The previews a crash left in the chats, by session (none without previews)."""
    if delivery.previews is None:
        return {}
    try:
        return await delivery.previews.recovered(gateway, sessions)
    except Exception as exc:  # the chats are recovered anyway; the previews next start
        log.error("%s: reading the previews left in chats failed: %s", gateway, exc)
        return {}


async def _recover(
    chat: ChatRef,
    session_id: str,
    parts: _Parts,
    report: RecoveryReport,
    preview: ReplyStream | None = None,
) -> None:
    progress = await parts.sessions.progress(session_id)
    if chat.kind is None and progress.chat_type is not None:  # a group's turns wait for a
        chat = ChatRef(chat.gateway, chat.chat_id, progress.chat_type)  # member's approval
    if not (
        progress.undelivered
        or progress.awaits_answer
        or progress.settled_unsent
        or progress.turn_unfinished
    ):
        if preview is not None:  # nothing is owed: what it shows is no reply of its own
            await preview.discard()
        return
    since = min(progress.last_delivered_seq, progress.last_answered_seq)
    events = await _events_after(parts.sessions, session_id, since)
    if progress.undelivered and await _deliver(chat, progress, events, parts, preview):
        report.delivered += 1
    elif preview is not None:  # no reply to put in its place: the turn runs again, or failed
        await preview.discard()
    # a prompt the chat may not have seen is asked again, unless a message after it is about
    # to cancel it (a DM); in a group others' messages wait for it (``turns.approval_wait``)
    group = chat.kind is not None and chat.kind not in DM_CHAT_TYPES
    if progress.settled_unsent and (group or not progress.awaits_answer):
        await _ask_again(chat, progress, events, parts)
    if not (progress.turn_unfinished or progress.awaits_answer):
        return
    rules = parts.settings(progress.agent, chat.chat_id, progress.chat_type)
    queue = rules[0]
    resumed = False
    # a turn an approval let go on comes first; in a sequential chat the messages people
    # wrote meanwhile get turns of their own after it, otherwise one turn answers them all
    if progress.turn_unfinished and (queue.mode == "sequential" or not progress.awaits_answer):
        resumed = await _go_on(chat, progress, events, parts, rules)
    if progress.awaits_answer:  # its turn runs from the end of the window
        resumed = _resume(chat, progress, events, parts, rules) or resumed
    if resumed:
        report.resumed += 1


async def _ask_again(
    chat: ChatRef, progress: ChatProgress, events: list[Event], parts: _Parts
) -> None:
    """The turn's end the chat may not have seen: an approval is asked again, a failure not."""
    settled = next((e for e in events if e.seq == progress.last_settled_seq), None)
    pending = (await parts.sessions.info(progress.session_id)).pending_approval
    if (
        settled is not None
        and settled.type == EventType.APPROVAL_REQUIRED
        and pending is not None
        and ApprovalRequiredData.of(settled.data).call_id == pending.call_id
    ):
        await parts.delivery.ask(chat, progress.session_id, pending.call_id, pending.command)
        return
    if settled is not None and settled.type == EventType.ERROR:
        # a failed turn whose notice may never have reached the chat: silence would leave the
        # person waiting for ever, so it is told (at least once, as a reply is)
        failure = ErrorData.of(settled.data)
        text = apology_for(failure.message or failure.code)
        await parts.delivery.tell_failure(
            chat, progress.session_id, settled.seq, text, _reply_to(events, settled.seq)
        )
        return
    # a request no longer pending: nothing to send; mark it seen so the session is not
    # examined again at every start
    await parts.delivery.mark_seen(chat, progress.session_id, progress.last_settled_seq)


def _reply_to(events: list[Event], seq: int) -> str | None:
    """The platform id of the newest user message before ``seq`` (what a reply quotes)."""
    for event in reversed(events):
        if event.seq < seq and event.type == EventType.USER_MESSAGE:
            return UserMessageData.of(event.data).platform_message_id
    return None


async def _deliver(
    chat: ChatRef,
    progress: ChatProgress,
    events: list[Event],
    parts: _Parts,
    preview: ReplyStream | None,
) -> bool:
    """Send the final replies after ``last_delivered_seq``, in order, recorded as one.

    As a reply to the user message before them: after ``last_delivered_seq`` as a rule, but
    a turn that paused for an approval had its prompt delivered after its message, so that
    message is then read further back (``_message_before``).
    """
    replies: list[tuple[int, AssistantResponseData]] = []
    reply_to: str | None = None
    for event in events:
        if event.seq <= progress.last_delivered_seq:
            continue
        if event.type == EventType.USER_MESSAGE and not replies:
            reply_to = UserMessageData.of(event.data).platform_message_id or reply_to
        elif (reply := _final_reply(event)) is not None:
            replies.append((event.seq, reply))
    if not replies:
        return False
    if reply_to is None:
        reply_to = await _message_before(parts.sessions, progress.session_id, replies[0][0])
    texts = [reply.content for _, reply in replies]
    last_seq, last = replies[-1]
    result = Complete(
        session_id=progress.session_id,
        content=texts[-1],
        earlier=tuple(texts[:-1]),
        reply_seq=last_seq,
        message_id=last.message_id,
        attachments=tuple(f for _, r in replies for f in ReplyFile.files_of(r.attachments)),
    )
    await parts.delivery.deliver(chat, result, reply_to=reply_to, stream=preview)
    return True


async def _message_before(sessions: SessionQueries, session_id: str, seq: int) -> str | None:
    """The newest user message's platform id before ``seq`` (the archive read if need be)."""
    for archive in (False, True):
        events = await sessions.events(session_id, include_archive=archive)
        if (found := _reply_to(events, seq)) is not None:
            return found
    return None


def _resume(
    chat: ChatRef,
    progress: ChatProgress,
    events: list[Event],
    parts: _Parts,
    rules: tuple[QueueSpec, ContextBufferSpec | None],
) -> bool:
    """Hand the messages after the last settled event to the chat queue, by its rules.

    As ``ChatFront`` would have: the chat's queue mode (``sequential``: one turn per
    message; otherwise one turn for them all) and, in a group whose agent answers mentions,
    the context buffer's block.
    """
    waiting: list[tuple[int, UserMessageData]] = []  # (seq, message)
    for e in events:
        if e.type == EventType.USER_MESSAGE and e.seq > progress.last_answered_seq:
            message = UserMessageData.of(e.data)
            if not message.passive:  # recorded to be read, owed no answer
                waiting.append((e.seq, message))
    if not waiting:
        return False
    queue, buffer = rules
    batches = [[m] for m in waiting] if queue.mode == "sequential" else [waiting]
    for batch in batches:
        (_, first), (last_seq, _) = batch[0], batch[-1]
        parts.queues.resume(
            progress.session_id,
            chat,
            last_seq,
            "\n".join(message.content for _, message in batch),
            first.platform_message_id,
            queue=queue,
            sender_id=first.sender_id,
            context_buffer=buffer,
        )
    return True


async def _go_on(
    chat: ChatRef,
    progress: ChatProgress,
    events: list[Event],
    parts: _Parts,
    rules: tuple[QueueSpec, ContextBufferSpec | None],
) -> bool:
    """Finish the turn a decided approval let go on, as an answer to its user message.

    That message is the one the approval's turn answers (``turn_seq`` of its
    ``approval_required`` event); an approval recorded before it was kept names none, and
    the last user message is taken, as before.
    """
    turn_seq = progress.last_user_seq
    for event in reversed(events):
        if event.type == EventType.APPROVAL_REQUIRED and event.seq < progress.last_decided_seq:
            turn_seq = ApprovalRequiredData.of(event.data).turn_seq or turn_seq
            break
    asked = [
        e
        for e in await _events_after(parts.sessions, progress.session_id, turn_seq - 1)
        if e.type == EventType.USER_MESSAGE and e.seq == turn_seq
    ]
    if not asked:
        return False
    message = UserMessageData.of(asked[0].data)
    queue, buffer = rules
    parts.queues.resume(
        progress.session_id,
        chat,
        turn_seq,
        message.content,
        message.platform_message_id,
        queue=queue,
        sender_id=message.sender_id,
        context_buffer=buffer,
    )
    return True


async def _events_after(sessions: SessionQueries, session_id: str, since: int) -> list[Event]:
    """Every event after ``since``, from the archive too when the live log starts later.

    A snapshot rolls the live log over up to the checkpoint, and a summary moves the
    checkpoint past messages no turn has answered yet (they are recorded while an earlier
    turn runs): after a crash those messages are only in the archive. Read there only when
    needed (the live log does not reach back to ``since``): the archive can be long.
    """
    events = await sessions.events(session_id, after_seq=since)
    if events and events[0].seq <= since + 1:
        return events
    return await sessions.events(session_id, after_seq=since, include_archive=True)


def _final_reply(event: Event) -> AssistantResponseData | None:
    """The model's final reply ``event`` records (None: another event, or a tool call)."""
    if event.type not in (EventType.ASSISTANT_RESPONSE, EventType.ASSISTANT_MESSAGE):
        return None
    reply = AssistantResponseData.of(event.data)
    return None if reply.tool_calls else reply
