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

An update that could not be handled (``handle`` raised: the store cannot write) is not
confirmed: polling asks for it again after a pause, as the webhook answers 500 for Telegram
to retry. Updates after it that were handled are not handled twice. An update that still
fails after ``MAX_ATTEMPTS`` is skipped with an error, so one poisonous update cannot stop
the bot for good.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from telegram import Bot, Update
from telegram.error import Conflict, Forbidden, InvalidToken, NetworkError, TelegramError

from duragent.frontkit import InboundBusyError
from duragent.gateways.telegram.updates import ALLOWED_UPDATES

__all__ = ["FatalPollingError", "poll_updates"]

log = logging.getLogger(__name__)

BACKOFF = (1.0, 2.0, 5.0, 10.0, 30.0)
"""Pauses after consecutive failed ``getUpdates`` calls (the last one repeats)."""
MAX_ATTEMPTS = 5
"""Times a batch whose update could not be handled is asked for again before skipping it."""


class FatalPollingError(Exception):
    """Telegram refuses the bot (token revoked, bot deleted): polling cannot go on."""


def _chat_of(update: Update) -> int | None:
    chat = update.effective_chat
    return chat.id if chat is not None else None


async def handle_batch(
    updates: Sequence[Update], handle: Callable[[Update], Awaitable[None]]
) -> list[int]:
    """Handle ``updates``: in order within a chat, chats concurrently; the ids that failed.

    A chat stops at its first failure: its later updates are left for the redelivery, so a
    chat's messages are still recorded in the order they were written.
    """
    by_chat: dict[int | None, list[Update]] = {}
    for update in updates:
        by_chat.setdefault(_chat_of(update), []).append(update)
    failed: list[int] = []

    async def one_chat(chat_updates: list[Update]) -> None:
        for update in chat_updates:
            try:
                await handle(update)
            except InboundBusyError as exc:  # only after a leader change: asked again
                log.info("telegram update %d: %s", update.update_id, exc)
                failed.append(update.update_id)
                return
            except Exception:
                log.exception("telegram update %d could not be handled", update.update_id)
                failed.append(update.update_id)
                return

    await asyncio.gather(*(one_chat(u) for u in by_chat.values()))
    return failed


async def poll_updates(
    bot: Bot,
    handle: Callable[[Update], Awaitable[None]],
    *,
    poll_seconds: int,
    on_state: Callable[[str], None] = lambda _state: None,
) -> None:
    """Poll until cancelled (raises ``FatalPollingError`` if Telegram refuses the bot)."""
    offset: int | None = None
    failures = 0
    attempts = 0  # of the batch whose first failed update ``offset`` now asks for again
    handled: set[int] = set()  # handled after the last confirmed offset: not handled twice
    while True:
        try:
            updates = await bot.get_updates(
                offset=offset, timeout=poll_seconds, allowed_updates=list(ALLOWED_UPDATES)
            )
        except (InvalidToken, Forbidden) as exc:
            raise FatalPollingError(f"Telegram refused the bot: {exc.message}") from exc
        except (Conflict, NetworkError, TelegramError) as exc:
            pause = BACKOFF[min(failures, len(BACKOFF) - 1)]
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
        failed = await handle_batch(fresh, handle)
        handled.update(u.update_id for u in fresh if u.update_id not in failed)
        if failed and attempts < MAX_ATTEMPTS:  # not recorded (a full disk…): ask again
            attempts += 1
            offset = min(failed)
            pause = BACKOFF[min(attempts - 1, len(BACKOFF) - 1)]
            log.warning(
                "telegram update %d was not recorded; asking Telegram for it again in %.0fs",
                offset,
                pause,
            )
            await asyncio.sleep(pause)
        else:
            if failed:
                log.error(
                    "telegram update(s) %s still could not be handled after %d attempts; skipped",
                    sorted(failed),
                    attempts + 1,
                )
            attempts = 0
            offset = updates[-1].update_id + 1
        handled = {i for i in handled if i >= offset}
