"""Receiving Telegram updates by webhook: Telegram POSTs each update to our HTTP server.

Chosen with ``gateways.telegram.webhook_url`` (a public HTTPS address that reaches this
server, usually through a reverse proxy). The HTTP front end serves the URL's path and hands
the body here; the answer's status is what Telegram sees:

- **200 only once the update is recorded** (the chat front returns after the message is on
  disk, or deliberately dropped). Anything else makes Telegram send it again later, and the
  platform message id recognises a message that was recorded after all.
- **401** without the secret Telegram echoes in ``X-Telegram-Bot-Api-Secret-Token``: anyone
  who finds the URL could otherwise post fake messages as any user. The secret is
  ``gateways.telegram.webhook_secret`` or, when unset, derived from the bot token (stable
  across restarts, unguessable without the token).
- **503** while another node records the same update (several nodes behind a load
  balancer, ``frontkit.chats``): Telegram sends it again, and it is then a duplicate.
- **The chat's session lives on another node** (``LeaseHeldError``, or ``FencedWriteError``
  when this node just lost it): raised to the HTTP front end, which forwards the update to
  the owner or takes the session over (``gateways/http/webhooks.py``).
- **One update at a time** (``max_connections=1`` at ``setWebhook``): Telegram would otherwise
  post several at once and a chat's messages could be recorded out of order.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from urllib.parse import urlsplit

from telegram import Bot, Update

from duragent.errors import StorageError
from duragent.frontkit import InboundBusyError
from duragent.store import FencedWriteError, LeaseHeldError

__all__ = ["SECRET_HEADER", "TelegramWebhook", "webhook_path", "webhook_secret"]

log = logging.getLogger(__name__)

SECRET_HEADER = "x-telegram-bot-api-secret-token"


def webhook_secret(configured: str | None, token: str) -> str:
    """The secret Telegram must echo: the configured one, or one derived from the token."""
    if configured:
        return configured
    return hashlib.sha256(f"duragent-telegram-webhook:{token}".encode()).hexdigest()[:48]


def webhook_path(url: str) -> str:
    """The path of ``webhook_url`` that the HTTP server serves (``/telegram/webhook`` if none)."""
    path = urlsplit(url).path
    return path if path not in ("", "/") else "/telegram/webhook"


class TelegramWebhook:
    """The body of a webhook request to its update handled (see module docstring)."""

    def __init__(self, bot: Bot, secret: str, handle: Callable[[Update], Awaitable[None]]) -> None:
        self._bot = bot
        self._secret = secret.encode()
        self._handle = handle

    async def __call__(self, body: bytes, headers: Mapping[str, str]) -> int:
        """The HTTP status to answer Telegram with."""
        given = headers.get(SECRET_HEADER, "").encode()
        if not hmac.compare_digest(given, self._secret):
            log.warning("telegram webhook: a request without the right secret was refused")
            return 401
        try:
            update = Update.de_json(json.loads(body), self._bot)
        except (ValueError, TypeError, KeyError) as exc:
            log.warning("telegram webhook: an unreadable update was refused (%s)", exc)
            return 400  # Telegram would send it again forever: nothing we can do with it
        try:
            await self._handle(update)
        except InboundBusyError as exc:  # another node records it now: ask Telegram to retry
            log.info("telegram update %d: %s; Telegram retries it", update.update_id, exc)
            return 503
        except LeaseHeldError:  # served where the session lives (the HTTP front end)
            raise
        except StorageError as exc:
            if isinstance(exc, FencedWriteError) or isinstance(exc.__cause__, FencedWriteError):
                raise  # this node just lost the session: served again where it lives now
            log.exception(
                "telegram update %d could not be handled; Telegram retries it", update.update_id
            )
            return 500
        except Exception:
            log.exception(
                "telegram update %d could not be handled; Telegram retries it", update.update_id
            )
            return 500
        return 200
