"""What a platform offers for a reply shown as it is written, and the pace it is shown at.

A reply streamed into a chat (``frontkit.preview``) is one message, sent once the first text
is there and edited as more arrives, then finalised in place with the formatted reply. The
kit's ``OutboundPort`` does not say how: a platform whose port also implements
``PreviewPort`` (Telegram, Discord) gets previews; any other (an external gateway, the
memory port of the tests) sends replies whole, as before. The kit finds it under the metrics
wrapper (``preview_port_of``).

Why a preview is plain text: a half-written reply is half-written Markdown (an open ``**``, a
code block not yet closed); rendered, it could fail to parse on every edit. Plain text never
fails, and the final edit puts the formatted reply in its place.

The pace (``PreviewBudget``): platforms limit sends and edits alike (Telegram about 30 a
second overall, about one a second in a chat, 20 a minute in a group), and a preview is worth
less than the reply itself. So a gateway's streamed replies share one budget, ``preview_rate``
calls a second over all its chats (below the platform's limit: approvals, notices and whole
replies keep the rest), and a chat is edited at most every ``preview_every(chat)`` seconds.
Final texts come first, then first previews, then edits: the reply matters more than
something to read early, which matters more than a fresher preview. Nobody waits in a queue
that only grows: a chat waits for one call at a time, a first preview that would come late
is not sent (the reply goes whole unless room comes back), and an edit sends whatever text
there is when its turn comes, so under load previews are edited less often, then not shown.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Protocol, runtime_checkable

from duragent.frontkit.outbound import ChatRef, MeteredOutbound, OutboundPort, SentMessage

__all__ = ["PreviewBudget", "PreviewPort", "preview_port_of"]


@runtime_checkable
class PreviewPort(Protocol):
    """A platform port that can show a reply as it is written (see module docstring).

    ``send_preview`` and ``edit_preview`` are tried once: a refusal (``PlatformBusyError``
    for "not now") only slows the preview. ``finish_preview`` is the reply itself: it waits
    out refusals in the chat's ``Outbox`` line, as ``send_text`` does.
    """

    preview_rate: float
    """Calls a second of streamed replies (previews, edits, final texts), over all chats."""

    def preview_every(self, chat: ChatRef) -> float:
        """The shortest time between two edits of a preview in ``chat``."""
        ...

    def preview_text(self, text: str) -> str:
        """``text`` as its preview shows it: stripped, cut to one message."""
        ...

    async def send_preview(
        self, chat: ChatRef, text: str, *, reply_to: str | None = None
    ) -> SentMessage:
        """Send ``preview_text(text)`` as plain text (no formatting), quoting as a reply does."""
        ...

    async def edit_preview(self, message: SentMessage, text: str) -> None:
        """Replace a preview's text with ``preview_text(text)``, plain."""
        ...

    async def finish_preview(
        self, message: SentMessage, text: str, *, reply_to: str | None = None
    ) -> SentMessage:
        """Put the reply ``text`` in the preview's place, formatted as ``send_text`` would.

        Split as ``send_text`` splits it: the first part replaces the preview, the others
        follow as new messages. A preview that is gone (deleted by someone, too old to edit)
        is replaced by a new message. Returns the last message of the reply.
        """
        ...

    async def delete_message(self, message: SentMessage) -> None:
        """Delete a message the bot sent (one already gone is not an error)."""
        ...


def preview_port_of(port: OutboundPort) -> PreviewPort | None:
    """``port`` as a ``PreviewPort`` (under the metrics wrapper), or None when it is not one."""
    inner = port.inner if isinstance(port, MeteredOutbound) else port
    return inner if isinstance(inner, PreviewPort) else None


class PreviewBudget:
    """At most ``per_second`` calls of a gateway's streamed replies, final texts first.

    A final text takes its slot at once (``charge``): it is the reply. A first preview gets
    the next slot after the final texts (``opening``), unless that slot is further away than
    it may wait: then the reply goes on without a preview for now (under load, replies go
    whole rather than late). An edit waits for a slot no first preview wants (``turn``). A
    caller cancelled while it waits gives its place to the next. No task runs while nobody
    waits (one timer when someone does).
    """

    def __init__(self, per_second: float) -> None:
        if per_second <= 0:
            raise ValueError("a preview budget needs a positive rate")
        self._gap = 1.0 / per_second
        self._free_at = 0.0
        self._debt = 0  # slots final texts took while callers waited
        self._firsts: deque[asyncio.Future[None]] = deque()
        self._edits: deque[asyncio.Future[None]] = deque()
        self._timer: asyncio.TimerHandle | None = None

    def waiting(self) -> int:
        """Callers waiting for their turn (the cancelled ones not yet passed over included)."""
        return len(self._firsts) + len(self._edits)

    def charge(self) -> None:
        """A final text was sent: its slot is taken, later previews come after it."""
        now = asyncio.get_running_loop().time()
        if self._timer is None:
            self._free_at = max(self._free_at, now) + self._gap
        else:
            self._debt += 1

    async def opening(self, within: float) -> bool:
        """Wait for a first preview's slot; False at once when it is over ``within`` away."""
        loop = asyncio.get_running_loop()
        ahead = self._debt + sum(1 for waiter in self._firsts if not waiter.done())
        if max(0.0, self._free_at - loop.time()) + ahead * self._gap > within:
            return False
        await self._wait(loop, self._firsts)
        return True

    async def turn(self) -> None:
        """Wait for an edit's slot."""
        await self._wait(asyncio.get_running_loop(), self._edits)

    async def _wait(
        self, loop: asyncio.AbstractEventLoop, line: deque[asyncio.Future[None]]
    ) -> None:
        now = loop.time()
        if self._timer is None and not self.waiting() and now >= self._free_at:
            self._free_at = now + self._gap
            return
        waiter: asyncio.Future[None] = loop.create_future()
        line.append(waiter)
        self._arm(loop)
        await waiter

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._timer is None:
            self._timer = loop.call_at(self._free_at, self._release, loop)

    def _release(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        if self._debt:  # a final text's slot: nobody is served in it
            self._debt -= 1
            self._free_at = loop.time() + self._gap
            if self.waiting():
                self._arm(loop)
            return
        for line in (self._firsts, self._edits):
            while line:
                waiter = line.popleft()
                if waiter.done():  # cancelled while it waited
                    continue
                waiter.set_result(None)
                self._free_at = loop.time() + self._gap
                if self.waiting():
                    self._arm(loop)
                return
