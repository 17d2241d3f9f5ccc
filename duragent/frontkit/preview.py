"""A chat reply shown as it is written: one preview message, edited, then final in place.

``ChatTurns`` gives each turn a ``ReplyStream`` as its ``TurnSink`` when the platform's port
can show previews (``PreviewPort``: Telegram, Discord) and the agent's
``spec.session.stream_replies`` is on (the default). What the chat sees:

- **Only replies still being written get a preview.** The first text starts a short wait
  (``FIRST_AFTER``); a reply still streaming after it gets a preview message, sent with the
  text so far as plain text (``preview_port``: half-written Markdown never fails to parse),
  as a reply to the message it answers where replies quote. A reply written within the wait
  is sent whole, as before: no preview, no edit, no extra call.
- **Edited as text arrives**, at most every ``preview_every(chat)`` seconds, never two calls
  in flight for one chat, within the gateway's budget for all its chats (``PreviewBudget``:
  final texts first, then first previews, then edits): under load a preview is edited less
  often, and a first preview that would wait longer than ``FIRST_WAIT`` is not sent (tried
  again later; the reply may go whole); nothing queues up. A refusal (a 429) waits the
  ``retry_after`` it named and the next edit sends whatever text there is then: it only slows
  the preview. An edit the platform refuses outright stops the edits; the final text still
  replaces the preview.
- **Final in place.** ``Delivery`` hands the reply here: the preview becomes its first part,
  formatted as the platform formats replies (``finish_preview``), and the rest of a long reply
  follows as new messages, as ``send_text`` splits it. Replies a turn wrote before its last
  (``Complete.earlier``) share the stream: the first one replaces the preview, the others are
  sent as usual.
- **A tool call or an approval request ends a preview**: the text the model wrote before it
  stays, formatted, in the preview's place (it is the recorded text of that step), and text
  written after it starts a new preview below. With nothing written, there was no preview.
  This happens beside the turn (a platform refusing for a while does not hold the tool call);
  the next preview and the final reply wait for it, so the chat's order holds.
- **A turn without a reply to show** (a failure, a timeout, a duplicate) deletes its preview:
  its text is not in the conversation. The failure is told as before.
- **A crash** (or a stop) mid-stream leaves the preview and its record
  (``preview_store``, written before the first edit). The next start's recovery edits it into
  the reply when the reply was written, or deletes it when the turn runs again: the chat ends
  with one final message. A stop cancels a stream's edits at once; a call already sent is
  waited for first, so a stale edit never lands after the final text.

Telegram's drafts (``sendMessageDraft``) are not used: one lasts ~30 s, only in private
chats, and is no message a restart could finish (``specs/202612051900.streamed-replies.md``).
The continuation of a turn after an approval (``ChatTurns.decide``) is sent whole.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from duragent.agents import AgentCatalog
from duragent.core.messages import ToolCall
from duragent.errors import NotFoundError
from duragent.frontkit.outbound import ChatRef, OutboundPort, SentMessage
from duragent.frontkit.outbox import PlatformBusyError
from duragent.frontkit.preview_port import PreviewBudget, PreviewPort, preview_port_of
from duragent.frontkit.preview_store import PreviewRecord, PreviewRecords

__all__ = ["FIRST_AFTER", "Previews", "ReplyStream"]

log = logging.getLogger(__name__)

T = TypeVar("T")

FIRST_AFTER = 0.5
"""Seconds after a reply's first text before it gets a preview (a reply that keeps streaming
past it does): quick replies go out whole, and the first text is still seen within a second."""

FIRST_WAIT = 0.4
"""Longest wait for a first preview's slot in the gateway's budget; a preview that would come
later is not sent now, and is tried again ``FIRST_AFTER`` later (see ``PreviewBudget``)."""


async def _to_the_end(call: Awaitable[T]) -> T:
    """``call``, run to its end even when the caller is cancelled meanwhile.

    A preview sent must be known (its id, its record), and an edit on its way must land
    before the final text does, not after it.
    """
    task = asyncio.ensure_future(call)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.wait([task])
        if not task.cancelled():
            task.exception()  # retrieved: it is the stream's to ignore now
        raise


class _Preview:
    """One preview message's text and state (one step of a turn: up to a tool call, or all)."""

    def __init__(self, message: SentMessage | None = None, record: PreviewRecord | None = None):
        self.parts: list[str] = []
        self.first: float | None = None  # when its first visible text arrived
        self.pump: asyncio.Task[None] | None = None
        self.changed = asyncio.Event()
        self.message = message
        self.record = record
        self.shown = ""
        self.final = False  # the reply's text is in its place

    def text(self) -> str:
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""

    async def stop(self) -> None:
        """End its edits; returns once a call on its way has ended."""
        pump, self.pump = self.pump, None
        if pump is not None:
            pump.cancel()
            await asyncio.wait([pump])


class ReplyStream:
    """One turn's reply, shown as it is written (a ``TurnSink``; see module docstring)."""

    def __init__(
        self,
        previews: Previews,
        chat: ChatRef,
        session_id: str,
        reply_to: str | None,
        current: _Preview | None = None,
    ) -> None:
        self._previews = previews
        self._chat = chat
        self._session_id = session_id
        self._reply_to = reply_to
        self._on = False
        self._current = current or _Preview()
        self._ending: list[asyncio.Task[None]] = []  # earlier previews being finished

    # -- the turn's side (``TurnSink``) -------------------------------------------------------

    async def opened(self, agent: str, on_disconnect: str) -> None:
        """The turn runs for ``agent``: its ``stream_replies`` says whether to preview."""
        self._on = bool(agent) and self._previews.streams(agent)

    async def token(self, text: str) -> None:
        """More of the reply: a preview starts once the reply is still written after a while."""
        if not self._on:
            return
        current = self._current
        current.parts.append(text)
        if current.pump is not None:
            current.changed.set()
        elif current.first is None:
            if text.strip():
                current.first = time.monotonic()
        elif time.monotonic() - current.first >= self._previews.first_after:
            current.pump = asyncio.create_task(self._show(current), name="reply-preview")

    async def tool_call(self, call: ToolCall) -> None:
        """A step ends: the text before the call stays in its preview's place."""
        self._end_current()

    async def tool_result(self, call_id: str, success: bool, content: str) -> None:
        """Not shown in the chat."""

    async def approval_required(self, call_id: str, command: str) -> None:
        """The turn stops for a decision: the text so far stays, the request follows."""
        self._end_current()

    async def summary(self, round_: int, through_seq: int, messages: int) -> None:
        """Not shown in the chat."""

    # -- the delivery's side ------------------------------------------------------------------

    async def finish(self, text: str) -> SentMessage | None:
        """Put the reply ``text`` in the preview's place; None when there is no preview.

        Earlier previews of the turn are final first. Raises what the port raises
        (``UndeliveredError``…): the preview and its record then stay for the next start.
        """
        current = self._current
        await current.stop()
        await self._earlier_ended()
        if self._on:
            self._previews.budget.charge()  # sent here or whole: the reply's call comes first
        if current.message is None or current.final:
            return None
        sent = await self._previews.port.finish_preview(
            current.message, text, reply_to=self._reply_to
        )
        current.final = True
        return sent

    async def close(self) -> None:
        """The reply is out: forget the preview (deleted if no text was put in its place)."""
        current = self._current
        await current.stop()
        await self._earlier_ended()
        if current.message is not None and not current.final:
            await self._delete(current)
        elif current.record is not None:
            await self._forget(current)

    async def discard(self) -> None:
        """The turn has no reply to show: its preview goes (see module docstring)."""
        current = self._current
        await current.stop()
        await self._earlier_ended()
        if current.message is not None:
            await self._delete(current)

    async def settle(self) -> None:
        """End the current preview with its text so far, and wait until it is final."""
        self._end_current()
        await self._earlier_ended()

    def stop(self) -> None:
        """Stop at once (the turn is cancelled): a preview and its record stay for recovery."""
        for task in (self._current.pump, *self._ending):
            if task is not None:
                task.cancel()

    # -- previews -----------------------------------------------------------------------------

    def _end_current(self) -> None:
        ended, self._current = self._current, _Preview()
        if ended.pump is None and ended.message is None:
            return
        earlier = list(self._ending)
        task = asyncio.create_task(self._end(ended, earlier), name="reply-preview-end")
        self._ending.append(task)

    async def _end(self, preview: _Preview, earlier: list[asyncio.Task[None]]) -> None:
        """A step's preview, final with its text (or deleted when it has none)."""
        if earlier:
            await asyncio.wait(earlier)
        await preview.stop()
        if preview.message is None:
            return
        text = preview.text()
        try:
            if not text.strip():
                await self._delete(preview)
                return
            self._previews.budget.charge()
            await self._previews.port.finish_preview(preview.message, text, reply_to=self._reply_to)
            preview.final = True
            await self._forget(preview)
        except Exception as exc:  # its record stays: the next start settles it
            log.warning("%s: a reply preview was not finished: %s", self._chat.target, exc)

    async def _earlier_ended(self) -> None:
        ending = [t for t in self._ending if not t.done()]
        if ending:
            await asyncio.wait(ending)
        self._ending = [t for t in self._ending if not t.done()]

    async def _show(self, preview: _Preview) -> None:
        """Send the preview, then edit it as text arrives, at the platform's pace."""
        try:
            await self._earlier_ended()  # a long step's last parts come before this preview
            if not await self._open(preview):
                return
            await self._edit_while_written(preview)
        except Exception as exc:  # a bug: the reply still goes out whole at the end
            log.error("%s: reply preview stopped: %r", self._chat.target, exc)

    async def _open(self, preview: _Preview) -> bool:
        """Send the preview and record it; False when no edit may follow."""
        port = self._previews.port
        while True:
            if not await self._previews.budget.opening(FIRST_WAIT):
                preview.pump, preview.first = None, time.monotonic()  # a later token tries again
                return False
            text = port.preview_text(preview.text())
            try:
                await _to_the_end(self._send(preview, text))
                return True
            except PlatformBusyError as busy:  # not now: the next try shows more
                await asyncio.sleep(busy.retry_after or port.preview_every(self._chat))
            except Exception as exc:
                if preview.message is None:
                    log.info("%s: no preview (%s); the reply goes whole", self._chat.target, exc)
                else:  # not edited unrecorded: the final text still replaces it
                    log.warning("%s: preview not recorded (%s)", self._chat.target, exc)
                return False

    async def _send(self, preview: _Preview, text: str) -> None:
        preview.message = await self._previews.port.send_preview(
            self._chat, text, reply_to=self._reply_to
        )
        preview.shown = text
        record = PreviewRecord(self._session_id, preview.message)
        await self._previews.store.save(record)  # durable before the first edit
        preview.record = record

    async def _edit_while_written(self, preview: _Preview) -> None:
        port, message = self._previews.port, preview.message
        assert message is not None
        every = port.preview_every(self._chat)
        last = time.monotonic()
        while True:
            await preview.changed.wait()
            preview.changed.clear()
            await asyncio.sleep(max(0.0, last + every - time.monotonic()))
            await self._previews.budget.turn()
            text = port.preview_text(preview.text())
            if text == preview.shown:
                continue  # nothing new to see (or the preview is full)
            try:
                await _to_the_end(port.edit_preview(message, text))
                preview.shown = text
            except PlatformBusyError as busy:
                await asyncio.sleep(busy.retry_after or every)
                preview.changed.set()  # the text it did not show is still to be shown
            except Exception as exc:
                log.info("%s: preview edits stopped (%s)", self._chat.target, exc)
                return
            last = time.monotonic()

    async def _delete(self, preview: _Preview) -> None:
        """Delete a preview; when that fails its record stays for the next start."""
        assert preview.message is not None
        try:
            await self._previews.port.delete_message(preview.message)
        except Exception as exc:
            log.warning("%s: a reply preview was not deleted: %s", self._chat.target, exc)
            return
        preview.message = None
        await self._forget(preview)

    async def _forget(self, preview: _Preview) -> None:
        record, preview.record = preview.record, None
        if record is not None:
            try:
                await self._previews.store.drop(record)
            except OSError as exc:
                log.warning("session %s: preview record not removed: %s", self._session_id, exc)


class Previews:
    """A gateway's reply previews: its port, their records, their budget (module docstring)."""

    def __init__(
        self,
        port: PreviewPort,
        store: PreviewRecords,
        agents: Callable[[], AgentCatalog],
        *,
        first_after: float = FIRST_AFTER,
    ) -> None:
        self.port = port
        self.store = store
        self._agents = agents
        self.first_after = first_after
        self.budget = PreviewBudget(port.preview_rate)

    @classmethod
    def over(
        cls, outbound: OutboundPort, records: PreviewRecords, agents: Callable[[], AgentCatalog]
    ) -> Previews | None:
        """Previews through ``outbound`` (None when its platform shows none)."""
        port = preview_port_of(outbound)
        return None if port is None else cls(port, records, agents)

    def streams(self, agent: str) -> bool:
        """Whether ``agent``'s replies stream into chats (``spec.session.stream_replies``)."""
        try:
            return self._agents().get(agent).spec.session.stream_replies
        except NotFoundError:
            return False

    def stream(self, chat: ChatRef, session_id: str, reply_to: str | None) -> ReplyStream:
        """A turn's stream into ``chat`` (off until the turn says its agent streams)."""
        return ReplyStream(self, chat, session_id, reply_to)

    async def recovered(
        self, gateway: str, sessions: set[str] | None = None
    ) -> dict[str, ReplyStream]:
        """The previews a crash left in ``gateway``'s chats (of ``sessions``), by session.

        Each session's newest is returned to be finished or discarded; older ones (a delete
        that failed before a later turn) are deleted now.
        """
        records = await asyncio.to_thread(self.store.load, gateway)
        by_session: dict[str, list[PreviewRecord]] = {}
        for record in sorted(records, key=lambda r: r.order):
            if sessions is None or record.session_id in sessions:
                by_session.setdefault(record.session_id, []).append(record)
        found: dict[str, ReplyStream] = {}
        for session_id, kept in by_session.items():
            for old in kept[:-1]:
                await self._left(old).discard()
            found[session_id] = self._left(kept[-1])
        return found

    def _left(self, record: PreviewRecord) -> ReplyStream:
        preview = _Preview(record.message, record)
        return ReplyStream(self, record.message.chat, record.session_id, None, preview)
