"""Handing a turn's result to its chat exactly once.

Two ways a reply could be sent twice, and what stops each:

- **A second message joins a running turn.** The runner hands the joiner the running turn's
  result with ``steered=True`` (both messages are answered by the one reply). The caller
  whose message started the turn delivers it; a steered result is never sent.
- **The same reply handed over again** (a gateway retrying, a restart re-running its
  delivery step). After a reply reaches the chat, a ``delivery`` event records its
  ``reply_seq`` durably; a reply at or below ``SessionInfo.last_delivered_seq`` is not sent
  again, and one being sent right now is not sent a second time in parallel.

A platform that refuses a reply for a while (flood control, a 5xx, the network) is waited
out by the gateway port's ``Outbox``, in the chat's order; a reply it gives up on, or one the
platform refused outright, is ``UndeliveredError`` to the caller (never a failed turn: the
reply exists and stays on disk, not recorded as delivered), which tells the chat once unless
``told`` says the outbox did.

A crash between sending and recording leaves that one reply unrecorded: handed over again
after the restart, it is sent again (at least once, no more than once per crash: no platform
lets a send and a local fsync be one step). A reply of several messages (its texts, each as
the messages the port splits it into, then its files: ``reply_parts``) is recorded part by
part, a part being one message: a ``delivery`` record with ``parts`` after each part but the
last, durable before the next part goes, then the whole reply's record (a reply of one
message writes that one alone, as before). Handed over again, it sends only the parts after
those recorded: a crash re-sends at most the message that was in flight. A
redelivered platform message that was already answered comes back from the runner as
``Duplicate`` and sends nothing. The replies a crash left unsent (after
``last_delivered_seq``) are handed over again at a gateway's start by ``recover_chats``.

A turn can write more than one reply: a message that arrives while the final answer is being
written is answered by another pass of the loop (``Complete.earlier`` holds the replies
before the last). The chat gets them all, in order, and the delivery recorded is the last
one's (``last_delivered_seq`` is a high-water mark).

Approvals and failures are recorded too, by the seq of the event that ended the turn
(``approval_required``, ``error``): a recovery then knows whether the person saw it. An
approval the chat never received is asked again (one decision is accepted); a failure is not
re-sent (the person can simply write again). An approval nobody in the chat may answer (no
requester, and the agent names no owner on the gateway: ``approval_rights``) is followed by a
note saying so and how to name an owner, so it never waits silently.

What was delivered is read from the session once per process (``SessionInfo``) and then
kept here, per session, as this ``Delivery`` recorded it (``DeliveredMark``, a bounded LRU):
the check before a send then costs no call to the session's actor. The kept mark can be
behind the disk only by records another ``Delivery`` made (the scheduler's, for the same
chat), and those are records of other replies: each reply is handed to one ``Delivery``,
whose own records and ``_sending`` set stop it sending that reply twice, and a restart reads
the disk.

A reply shown as it was written (``preview``) comes with its turn's ``ReplyStream``: its
first part (its first text's first message) is put in the preview's place instead of being
sent, the rest as usual, and the preview's record is removed before that part's
``delivery`` record is written (a crash in between sends the part again, as above; the other
order could have a restart delete it). A reply whose first part is recorded already has
nothing to put there: its preview goes. A
result with no reply to show (a duplicate, a failure) deletes the preview; an approval
request follows the text the preview showed. After a crash, ``recovery`` hands over the
preview the crash left the same way.

A reply's files (``Complete.attachments``: ``send_file``'s) follow its text, read from the
session's attachments, each a part of its own. A file the platform refuses outright is told
in a line instead (``reply_parts.send_reply_file``).

HTTP does not use ``Delivery``: its reply is the response to the request that asked (every
request, a steered one included, must be answered), and there is no chat to re-send to
after a restart — the client reads ``GET …/messages``. So HTTP sessions record no
``delivery`` events, as before.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable

from duragent.agents import AgentCatalog
from duragent.errors import NotFoundError
from duragent.frontkit.approval_rights import unanswerable_note
from duragent.frontkit.outbound import ChatRef, OutboundPort, SentMessage
from duragent.frontkit.outbox import UndeliveredError
from duragent.frontkit.preview import Previews, ReplyStream
from duragent.frontkit.reply_parts import DeliveredMark, ReplyPart, reply_parts, send_part
from duragent.tools.send_file import ReplyFile
from duragent.turns import (
    AwaitingApproval,
    Complete,
    Duplicate,
    Failed,
    TurnResult,
    TurnRunner,
)

__all__ = ["Deliveries", "Delivery"]

log = logging.getLogger(__name__)

KEPT_SESSIONS = 10_000
"""Sessions whose delivered mark is kept in memory (the least recently used go first)."""


class Delivery:
    """Sends turn results to chats through an ``OutboundPort``, each reply once."""

    def __init__(
        self,
        turns: TurnRunner,
        outbound: OutboundPort,
        *,
        agents: Callable[[], AgentCatalog] | None = None,
    ) -> None:
        self._turns = turns
        self._outbound = outbound
        self._agents = agents
        """Whose ``spec.access`` says whether anyone in a chat may answer an approval (None:
        no note is sent)."""
        self._sending: set[tuple[str, int]] = set()  # (session, reply_seq) being sent now
        self._delivered: OrderedDict[str, DeliveredMark] = OrderedDict()  # session → its mark
        self.previews: Previews | None = None
        """The gateway's reply previews (``ChatTurns`` sets them; recovery reads them)."""

    async def deliver(
        self,
        chat: ChatRef,
        result: TurnResult,
        *,
        reply_to: str | None = None,
        stream: ReplyStream | None = None,
    ) -> SentMessage | None:
        """Send ``result`` to ``chat``; the message sent last, or None when nothing was sent.

        ``stream``: the turn's reply as it was shown while written (module docstring).
        """
        if result.steered or isinstance(result, Duplicate):
            if stream is not None:
                await stream.discard()
            return None  # the caller whose message started the turn sends its reply
        match result:
            case Complete(content=text, reply_seq=seq, earlier=earlier):
                texts = (*earlier, text)
                return await self._once(
                    chat, result.session_id, seq, texts, reply_to, stream, files=result.attachments
                )
            case AwaitingApproval():
                if stream is not None:
                    await stream.settle()
                return await self.ask(chat, result.session_id, result.call_id, result.command)
            case Failed(content=text):
                if stream is not None:
                    await stream.discard()
                sent = await self._outbound.send_text(chat, text, reply_to=reply_to)
                await self._record_settled(chat, result.session_id)
                return sent

    async def _once(
        self,
        chat: ChatRef,
        session_id: str,
        reply_seq: int | None,
        texts: tuple[str, ...],
        reply_to: str | None,
        stream: ReplyStream | None = None,
        *,
        files: tuple[ReplyFile, ...] = (),
    ) -> SentMessage | None:
        parts = reply_parts(texts, files, self._outbound.pieces)
        if reply_seq is None:  # nothing on disk to record against (not produced today)
            return await self._parts(chat, session_id, None, parts, 0, reply_to, stream)
        key = (session_id, reply_seq)
        if key in self._sending:
            if stream is not None:
                await stream.discard()
            return None
        self._sending.add(key)  # before any await: a second caller sees it at once
        try:
            done = (await self._mark(session_id)).parts_of(reply_seq)
            if done is None:
                log.info("session %s: reply %d was delivered already", session_id, reply_seq)
                if stream is not None:
                    await stream.discard()
                return None
            try:
                sent = await self._parts(chat, session_id, reply_seq, parts, done, reply_to, stream)
            except UndeliveredError:
                raise
            except Exception as exc:  # refused outright: the reply exists, the turn did not fail
                raise UndeliveredError(
                    f"session {session_id}: {chat.target} refused reply {reply_seq}: {exc}",
                    told=False,
                ) from exc
            await self._record_sent(chat, session_id, reply_seq)
            return sent
        finally:
            self._sending.discard(key)

    async def ask(self, chat: ChatRef, session_id: str, call_id: str, command: str) -> SentMessage:
        """Ask for a decision on ``call_id``, and record that the request reached the chat.

        Recorded (the ``approval_required`` event's seq as delivered), so a recovery after a
        crash before this point asks again; asking twice is harmless (one decision is
        accepted, and a stale one is refused with ``NoPendingApprovalError``).
        """
        sent = await self._outbound.ask_approval(
            chat, session_id=session_id, call_id=call_id, command=command
        )
        await self._record_settled(chat, session_id, call_id)
        await self._tell_unanswerable(chat, session_id, call_id)
        return sent

    async def _tell_unanswerable(self, chat: ChatRef, session_id: str, call_id: str) -> None:
        """The note after an approval nobody in the chat may answer (module docstring).

        A courtesy: the approval stands (HTTP and the console can decide it) if it fails.
        """
        if self._agents is None:
            return
        try:
            info = await self._turns.sessions.info(session_id)
            pending = info.pending_approval
            if pending is None or pending.call_id != call_id:
                return
            try:
                access = self._agents().get(info.agent).spec.access
            except NotFoundError:
                return
            note = unanswerable_note(
                access,
                gateway=chat.gateway,
                agent=info.agent,
                session_id=session_id,
                requester_id=pending.requester_id,
            )
            if note is not None:
                log.warning("session %s: %s", session_id, note)
                await self._outbound.send_text(chat, note)
        except Exception as exc:
            log.warning(
                "session %s: could not tell %s that nobody there may answer its approval: %s",
                session_id,
                chat.target,
                exc,
            )

    async def _record_settled(
        self, chat: ChatRef, session_id: str, call_id: str | None = None
    ) -> None:
        """Record the turn's end (a failure, an approval request) as delivered to ``chat``.

        The queue runs one turn at a time per session and delivers before the next starts,
        so the session's last settled event is the one just sent. An approval is recorded
        only while it is still the one pending.
        """
        info = await self._turns.sessions.info(session_id)
        if call_id is not None and (
            info.pending_approval is None or info.pending_approval.call_id != call_id
        ):
            return
        if info.last_settled_seq > info.last_delivered_seq:
            await self._record_sent(chat, session_id, info.last_settled_seq)

    async def tell_failure(
        self, chat: ChatRef, session_id: str, seq: int, text: str, reply_to: str | None
    ) -> SentMessage | None:
        """Send the notice of the failed turn ``seq`` (an ``error`` event) once, recorded."""
        return await self._once(chat, session_id, seq, (text,), reply_to)

    async def mark_seen(self, chat: ChatRef, session_id: str, seq: int) -> None:
        """Record ``seq`` (a turn's end the chat need not get again) as delivered."""
        await self._record(chat, session_id, seq)

    async def _mark(self, session_id: str) -> DeliveredMark:
        kept = self._delivered.get(session_id)
        if kept is not None:
            self._delivered.move_to_end(session_id)
            return kept
        read = DeliveredMark.of(await self._turns.sessions.info(session_id))
        return self._keep(session_id, lambda _: read)

    async def _record_sent(self, chat: ChatRef, session_id: str, seq: int) -> None:
        """Record what the chat has just been sent; a failure here is not the turn's.

        The person has the message: turning a lost record (the store went away after the
        send) into a failed turn would follow a reply with an apology. The record is kept in
        memory so this process never sends it again; only a restart before the store comes
        back may (the documented re-send after a crash).
        """
        try:
            await self._record(chat, session_id, seq)
        except Exception as exc:
            self._keep(session_id, lambda mark: mark.whole(seq))
            log.warning(
                "session %s: %s got event %d, but recording its delivery failed (%s); "
                "a restart before the store recovers may send it again",
                session_id,
                chat.target,
                seq,
                exc,
            )

    async def _record(self, chat: ChatRef, session_id: str, seq: int) -> None:
        await self._turns.record_delivery(session_id, seq, chat.target)
        self._keep(session_id, lambda mark: mark.whole(seq))

    async def _record_part(self, chat: ChatRef, session_id: str, seq: int, parts: int) -> None:
        """Record that reply ``seq``'s first ``parts`` parts reached the chat (module docstring).

        Durable before the next part is sent. A record that fails is kept in memory (this
        process does not send those parts again) and the reply goes on: the person waits for
        the rest, and only a restart before the store recovers may send them again.
        """
        try:
            await self._turns.record_delivery(session_id, seq, chat.target, parts=parts)
        except Exception as exc:
            log.warning(
                "session %s: part %d of event %d went, unrecorded: %s", session_id, parts, seq, exc
            )
        if session_id in self._delivered:  # read before the reply's first part went (``_once``)
            self._keep(session_id, lambda mark: mark.part(seq, parts))

    def _keep(
        self, session_id: str, change: Callable[[DeliveredMark], DeliveredMark]
    ) -> DeliveredMark:
        """Remember the session's mark as ``change`` leaves it (high-water marks); returns it."""
        kept = change(self._delivered.pop(session_id, DeliveredMark()))
        self._delivered[session_id] = kept
        if len(self._delivered) > KEPT_SESSIONS:
            self._delivered.popitem(last=False)
        return kept

    async def _parts(
        self,
        chat: ChatRef,
        session_id: str,
        reply_seq: int | None,
        parts: tuple[ReplyPart, ...],
        done: int,
        reply_to: str | None,
        stream: ReplyStream | None,
    ) -> SentMessage | None:
        """Send the reply's parts after the first ``done``, in order; the last message sent.

        Quoting ``reply_to`` as ``send_part`` does. With a ``stream`` whose preview is in the
        chat, the first part takes its place when it is a text's, and the preview is
        forgotten once that part is out. Each part but the last is recorded (``reply_seq``
        None: nothing is).
        """
        if done and stream is not None:  # the part its preview was for reached the chat
            await stream.discard()
            stream = None
        sent: SentMessage | None = None
        for number, part in enumerate(parts[done:], start=done + 1):
            in_place = None
            if stream is not None and not isinstance(part, ReplyFile):
                in_place = await stream.finish(part.text)
            sent = in_place or await send_part(
                self._turns, self._outbound, chat, session_id, part, number, reply_to
            )
            if stream is not None:
                await stream.close()
                stream = None
            if reply_seq is not None and number < len(parts):
                await self._record_part(chat, session_id, reply_seq, number)
        if stream is not None:  # nothing was sent: the preview goes
            await stream.close()
        return sent


class Deliveries:
    """A ``Delivery`` per chat gateway, for work that is not a gateway's own.

    Scheduled runs and background-job notices find it by the gateway's name; it is made
    again when the gateway's outbound port changed (a restarted gateway has a new one).
    """

    def __init__(
        self,
        turns: TurnRunner,
        outbound: Callable[[str], OutboundPort | None],
        *,
        agents: Callable[[], AgentCatalog],
    ) -> None:
        self._turns = turns
        self._outbound = outbound
        self._agents = agents
        self._known: dict[str, tuple[OutboundPort, Delivery]] = {}

    def get(self, gateway: str) -> Delivery | None:
        """The gateway's ``Delivery``; None when the gateway is not configured or started."""
        port = self._outbound(gateway)
        if port is None:
            return None
        known = self._known.get(gateway)
        if known is None or known[0] is not port:
            known = (port, Delivery(self._turns, port, agents=self._agents))
            self._known[gateway] = known
        return known[1]
