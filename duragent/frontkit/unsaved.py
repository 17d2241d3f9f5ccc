"""A message its platform will not send again, held while the store cannot record it.

Telegram sends an update again until it is confirmed, and a webhook's 503 is retried by
the platform, so there a message that cannot be recorded (a full disk, the database away)
is simply not confirmed. Discord hands each message once: before, one that could not be
recorded was logged as lost, and its author never heard of it. ``record_or_tell`` keeps it
in memory and tries again with growing pauses (``PAUSES``: about half a minute), which
rides out a database restart or a failover; then it tells the chat that the message was
not saved and should be sent again. A message it could not record is never answered as if
it had been: the apology says so, and nothing is sent twice (a retry goes through the same
inbound ledger claim, released after each failed attempt).

The chat's lane is held meanwhile (the gateway calls this inside it), so the chat's later
messages wait behind it and are recorded in the order they were written.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from duragent.frontkit.inbound import InboundMessage
from duragent.frontkit.outbound import OutboundPort

__all__ = ["NOT_SAVED", "PAUSES", "record_or_tell"]

log = logging.getLogger(__name__)

NOT_SAVED = (
    "Sorry, I could not save your message: the server's storage is unavailable. "
    "Please send it again in a minute."
)
PAUSES = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0)
"""Seconds between attempts to record a message (about 30 s in all)."""


async def record_or_tell(
    record: Callable[[], Awaitable[None]],
    message: InboundMessage,
    outbound: OutboundPort,
    pauses: Sequence[float] = PAUSES,
) -> bool:
    """``record()``, again after each pause while storage refuses it; whether it was recorded.

    Storage errors (``OSError``) are waited out; anything else raises at once (the caller
    logs it). When every attempt failed, the chat is told ``NOT_SAVED``.
    """
    where = f"{message.gateway} message {message.message_id} in {message.chat.target}"
    for attempt, pause in enumerate([*pauses, None], start=1):
        try:
            await record()
            if attempt > 1:
                log.info("%s recorded at attempt %d", where, attempt)
            return True
        except OSError as exc:  # StorageError: the disk or the database refused it
            if pause is None:
                log.error("%s could not be recorded after %d attempts (%s); telling the chat",
                          where, attempt, exc)  # fmt: skip
                break
            log.warning("%s could not be recorded (%s); trying again in %.1f s",
                        where, exc, pause)  # fmt: skip
            await asyncio.sleep(pause)
    try:
        await outbound.send_text(message.chat, NOT_SAVED, reply_to=message.message_id)
    except Exception as exc:
        log.error("could not tell %s that its message was not saved: %s", message.chat.target, exc)
    return False
