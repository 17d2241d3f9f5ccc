"""Long polling that confirms an update to Telegram only after the kit has recorded it.

python-telegram-bot's own ``Updater`` confirms a batch of updates (by asking for the next
offset) as soon as it has queued them for the handlers, so a crash while they wait in memory
loses messages Telegram will never send again. Here the next ``getUpdates`` asks for
``offset = last + 1`` only after every update of the batch went through ``handle`` (which
returns once the message is on disk, or deliberately dropped). A crash before that makes
Telegram send the batch again, and the platform message ids recognise what was already
recorded: nothing accepted is lost, nothing is answered twice.

Updates of one chat are handled in order; different chats are handled concurrently, so one
slow chat does not hold up the rest of the batch more than its own messages need.

An update that could not be handled is not confirmed: polling asks for it again after a
pause, as the webhook answers 500 for Telegram to retry. Updates after it that were handled
are not handled twice. Two kinds of failure:

- **transient** (``OSError``: the disk or the database refused the write; ``UNHANDED``:
  no node took the update — another node records it now (``InboundBusyError``), or the
  chat's session is owned by a node that neither took it from the relay nor let its lease
  run out (``LeaseHeldError``, ``RelayFailedError``: ``cluster.relay``)): the update is
  asked for again for as long as it takes, the pause growing to ``BACKOFF[-1]``. Before,
  these counted towards the poison limit below, so a database outage longer than the first
  five pauses (~48 s) skipped every message that arrived during it, and nobody was told;
- **anything else** (the update itself breaks the handler): after ``MAX_ATTEMPTS`` it is
  skipped with an error, so one poisonous update cannot stop the bot for good. Only that
  update is skipped: it is remembered as handled and the batch is asked for again, so the
  updates behind it (its chat's later messages, which its chat stopped at) are handled.
  Before, the whole batch was confirmed, dropping them unseen.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from telegram import Bot, Update
from telegram.error import Conflict, Forbidden, InvalidToken, NetworkError, TelegramError

from duragent.cluster import RelayFailedError
from duragent.frontkit import InboundBusyError
from duragent.gateways.telegram.updates import ALLOWED_UPDATES
from duragent.store import LeaseHeldError

__all__ = ["FatalPollingError", "poll_updates"]

log = logging.getLogger(__name__)

BACKOFF = (1.0, 2.0, 5.0, 10.0, 30.0)
"""Pauses after consecutive failed ``getUpdates`` calls (the last one repeats)."""
MAX_ATTEMPTS = 5
"""Times a batch whose update could not be handled is asked for again before skipping it."""
UNHANDED = (InboundBusyError, LeaseHeldError, RelayFailedError)
"""Failures that say no node took the update yet: never a reason to skip it."""


class FatalPollingError(Exception):
    """Telegram refuses the bot (token revoked, bot deleted): polling cannot go on."""


def _chat_of(update: Update) -> int | None:
    chat = update.effective_chat
    return chat.id if chat is not None else None


@dataclass(slots=True)
class Batch:
    """What became of a batch: the ids handled, and the failed ones (id → transient)."""

    handled: list[int] = field(default_factory=list)
    failed: dict[int, bool] = field(default_factory=dict)


async def handle_batch(
    updates: Sequence[Update], handle: Callable[[Update], Awaitable[None]]
) -> Batch:
    """Handle ``updates``: in order within a chat, chats concurrently.

    A chat stops at its first failure: its later updates are neither handled nor failed,
    left for the redelivery, so a chat's messages are still recorded in the order they were
    written. (Before, they counted as handled and were never asked for again.)
    """
    by_chat: dict[int | None, list[Update]] = {}
    for update in updates:
        by_chat.setdefault(_chat_of(update), []).append(update)
    batch = Batch()
    failed = batch.failed

    async def one_chat(chat_updates: list[Update]) -> None:
        for update in chat_updates:
            try:
                await handle(update)
            except UNHANDED as exc:  # a leader change, or the chat's owner did not take it
                log.info("telegram update %d: %s; asked for again", update.update_id, exc)
                failed[update.update_id] = True
                return
            except OSError:  # StorageError: the store is full or away, not the update
                log.exception("telegram update %d could not be handled", update.update_id)
                failed[update.update_id] = True
                return
            except Exception:
                log.exception("telegram update %d could not be handled", update.update_id)
                failed[update.update_id] = False
                return
            batch.handled.append(update.update_id)

    await asyncio.gather(*(one_chat(u) for u in by_chat.values()))
    return batch


async def poll_updates(
    bot: Bot,
    handle: Callable[[Update], Awaitable[None]],
    *,
    poll_seconds: int,
    on_state: Callable[[str], None] = lambda _state: None,
    backoff: Sequence[float] = BACKOFF,
) -> None:
    """Poll until cancelled (raises ``FatalPollingError`` if Telegram refuses the bot).

    ``backoff``: the pauses before asking again (``BACKOFF``; tests shorten them).
    """
    offset: int | None = None
    failures = 0
    attempts = 0  # of the update(s) failing for themselves that ``offset`` asks for again
    retries = 0  # pauses in a row before asking for failed updates again
    handled: set[int] = set()  # handled after the last confirmed offset: not handled twice
    while True:
        try:
            updates = await bot.get_updates(
                offset=offset, timeout=poll_seconds, allowed_updates=list(ALLOWED_UPDATES)
            )
        except (InvalidToken, Forbidden) as exc:
            raise FatalPollingError(f"Telegram refused the bot: {exc.message}") from exc
        except (Conflict, NetworkError, TelegramError) as exc:
            pause = backoff[min(failures, len(backoff) - 1)]
            failures += 1
            if isinstance(exc, Conflict):
                reason = (
                    "another process is receiving this bot's updates (a second server, or a "
                    "webhook): stop it"
                )
            else:
                reason = exc.message
            level = logging.WARNING if failures in (1, 5) or failures % 60 == 0 else logging.DEBUG
            log.log(level, "telegram getUpdates failed (%s); retrying in %.0fs", reason, pause)
            on_state(f"reconnecting: {reason}")
            await asyncio.sleep(pause)
            continue
        if failures:
            log.info("telegram getUpdates works again after %d failures", failures)
            failures = 0
        on_state("running")
        if not updates:
            continue
        fresh = [u for u in updates if u.update_id not in handled]
        batch = await handle_batch(fresh, handle)
        handled.update(batch.handled)
        failed = batch.failed
        poison = sorted(i for i, transient in failed.items() if not transient)
        attempts = attempts + 1 if poison else 0
        if poison and attempts > MAX_ATTEMPTS:  # skip those, ask again for what is behind
            log.error(
                "telegram update(s) %s still could not be handled after %d attempts; skipped",
                poison,
                attempts,
            )
            handled.update(poison)
            attempts, retries = 0, 0
            offset = min(failed)
        elif failed:  # not recorded (a full disk, the database away…): ask again
            offset = min(failed)
            pause = backoff[min(retries, len(backoff) - 1)]
            retries += 1
            log.log(
                logging.WARNING if retries <= 5 or retries % 20 == 0 else logging.DEBUG,
                "telegram update %d was not recorded; asking Telegram for it again in %.0fs",
                offset,
                pause,
            )
            await asyncio.sleep(pause)
        else:
            retries = 0
            offset = updates[-1].update_id + 1
        handled = {i for i in handled if i >= offset}
