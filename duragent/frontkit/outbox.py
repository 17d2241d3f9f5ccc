"""``Outbox``: a message the platform refuses for a while waits its turn and goes out.

A platform says "not now" in three ways: flood control (Telegram's and Discord's 429 with a
``retry_after``), a 5xx, or a connection lost on the way. None of them says the message is
wrong, and the message is already durable (a reply is its ``assistant_response`` event; an
approval its ``approval_required``; a delivery is recorded only once the platform took it,
``Delivery``). So a refused send is not a failed turn: apologising for an answer that
exists, and inviting the person to ask again, cost a second turn and a second answer.

Each chat gateway's port sends every message (reply, approval prompt, scheduled message,
notice) through its ``Outbox``:

- **One chat, one line.** A chat's messages go out in the order they were handed over: one
  that waits out a refusal holds the chat's later ones behind it (FIFO lock per chat), while
  other chats go on. A chat's line is forgotten once nothing uses it.
- **Retried until taken.** A refusal the gateway translated into ``PlatformBusyError`` is
  waited out (the platform's ``retry_after`` when it named one, else a growing pause, from
  ``BACKOFF``) and the send tried again. Platform-wide limits stay the SDK's (PTB's rate
  limiter holds every send during Telegram's ``retry_after``; discord.py its buckets).
  Any other error (a 403, a chat that is gone) is raised at once: waiting cannot fix it.
- **Until an expiry.** A message still refused ``retry_for`` seconds after it was handed
  over (``gateways.<name>.delivery_retry_seconds``, ten minutes by default) is given up:
  logged as an error naming the setting, the person is told once (``UNDELIVERED``, one
  attempt, after the platform's last ``retry_after``: it may still refuse it), and
  ``UndeliveredError`` is raised with ``told`` set, so nobody apologises on top. The
  message stays on disk: the model can repeat it, and a reply not recorded as delivered is
  sent by the next start's recovery if no later reply of the chat was delivered first.
  While the platform keeps refusing a chat, it is told once, not once per message: the next
  success clears it.

A send that timed out may have arrived, so a retry can repeat it: the kit's guarantee stays
"at least once", as across crashes. Nothing is kept on disk here: a restart finds what was
owed from the session logs (``recovery``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

from duragent.errors import DuragentError
from duragent.frontkit.outbound import ChatRef

__all__ = [
    "BACKOFF",
    "DELIVERY_RETRY_SECONDS",
    "UNDELIVERED",
    "Outbox",
    "PlatformBusyError",
    "UndeliveredError",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

DELIVERY_RETRY_SECONDS = 600.0
"""How long a refused message is retried before the chat is told (the config's default)."""

BACKOFF = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
"""Pauses between tries when the platform named no ``retry_after`` (the last one repeats)."""

UNDELIVERED = (
    "A message of mine could not be delivered here: the chat platform kept refusing it. "
    "It is saved in our conversation; ask me to repeat it if you need it "
    "(there is no need to send your question again)."
)
"""Told once when a message is given up (or a written reply was refused outright)."""

KEPT_TOLD = 10_000
"""Chats remembered as told during an outage (the oldest are forgotten first)."""


class PlatformBusyError(DuragentError):
    """The platform refused a send for a while (429, 5xx, the network): try again later.

    Raised by a gateway's port, translated from its SDK's errors; ``retry_after`` is the wait
    the platform named, in seconds (None: it named none).
    """

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(reason)


class UndeliveredError(DuragentError):
    """A message to a chat could not be delivered (see module docstring).

    ``told``: the chat was told (or telling it was tried and logged): nobody should tell or
    apologise again.
    """

    def __init__(self, message: str, *, told: bool) -> None:
        self.told = told
        super().__init__(message)


class Outbox:
    """A gateway's per-chat lines of messages waiting out refusals (see module docstring)."""

    def __init__(
        self,
        gateway: str,
        notify: Callable[[ChatRef, str], Awaitable[object]],
        *,
        retry_for: float = DELIVERY_RETRY_SECONDS,
        setting: str | None = None,
        backoff: tuple[float, ...] = BACKOFF,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``notify(chat, text)`` sends one plain message once (the port's own, un-retried).

        ``setting`` names the field that sets ``retry_for`` (for the log line).
        """
        self._gateway = gateway
        self._notify = notify
        self._retry_for = retry_for
        self._setting = setting or f"gateways.{gateway}.delivery_retry_seconds"
        self._backoff = backoff or BACKOFF
        self._clock = clock
        self._lanes: dict[str, tuple[asyncio.Lock, list[int]]] = {}
        self._told: dict[str, None] = {}  # chats told during the current outage (ordered)

    def __len__(self) -> int:
        """Chats with a message being sent or waiting."""
        return len(self._lanes)

    @asynccontextmanager
    async def lane(self, chat: ChatRef) -> AsyncIterator[float]:
        """Hold ``chat``'s line for the block, after its earlier messages.

        Yields the time the message was handed over: its expiry counts from there.
        """
        handed = self._clock()
        lock, users = self._lanes.setdefault(chat.target, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield handed
        finally:
            users[0] -= 1
            if not users[0]:
                del self._lanes[chat.target]

    async def send(self, chat: ChatRef, attempt: Callable[[], Awaitable[T]]) -> T:
        """``attempt()`` in ``chat``'s line, retried while the platform is busy."""
        async with self.lane(chat) as handed:
            return await self.persist(chat, attempt, since=handed)

    async def persist(
        self, chat: ChatRef, attempt: Callable[[], Awaitable[T]], *, since: float
    ) -> T:
        """``attempt()`` until it succeeds, waiting out ``PlatformBusyError``.

        Given up at ``since + retry_for`` (see module docstring); the caller holds the
        chat's ``lane``.
        """
        refusals = 0
        while True:
            try:
                result = await attempt()
            except PlatformBusyError as busy:
                pause = busy.retry_after
                if pause is None:
                    pause = self._backoff[min(refusals, len(self._backoff) - 1)]
                refusals += 1
                waited = self._clock() - since
                if waited + pause > self._retry_for:
                    raise await self._give_up(chat, busy, waited) from busy
                log.info(
                    "%s: %s refused a message for now (%s); trying again in %.1fs",
                    self._gateway,
                    chat.target,
                    busy,
                    pause,
                )
                await asyncio.sleep(pause)
                continue
            self._told.pop(chat.target, None)
            if refusals:
                log.info(
                    "%s: %s took the message after %d refusal(s)",
                    self._gateway,
                    chat.target,
                    refusals,
                )
            return result

    async def _give_up(
        self, chat: ChatRef, busy: PlatformBusyError, waited: float
    ) -> UndeliveredError:
        reason = (
            f"{self._gateway}: a message to {chat.target} was not delivered: the platform "
            f"refused it for {waited:.0f}s ({busy}); it is kept in the session. Raise "
            f"{self._setting} (now {self._retry_for:g}) to wait longer"
        )
        log.error("%s", reason)
        if chat.target in self._told:
            log.info("%s: %s was told already during this outage", self._gateway, chat.target)
        else:
            self._told[chat.target] = None
            if len(self._told) > KEPT_TOLD:
                self._told.pop(next(iter(self._told)))
            try:
                if busy.retry_after is not None:  # the notice, too, must not come early
                    await asyncio.sleep(busy.retry_after)
                await self._notify(chat, UNDELIVERED)
            except Exception as exc:  # still refused: the log line above is what remains
                log.warning(
                    "%s: could not tell %s that a message was not delivered: %s",
                    self._gateway,
                    chat.target,
                    exc,
                )
        return UndeliveredError(reason, told=True)
