"""``TelegramGateway``: the Telegram front end as one service of ``duragent serve``.

Start: build python-telegram-bot's ``Application`` (its HTTP client, and its
``AIORateLimiter`` for Telegram's flood limits and ``retry_after``, with a bucket per private
chat added: ``limits``), ask ``getMe`` who the bot
is (a rejected token is a clear error naming ``gateways.telegram.bot_token``; the runtime lists
this service as optional, so HTTP keeps serving), then receive updates by long polling
(``polling``; with several nodes, on the one holding the polling leader lease) or by webhook
(``webhook``, on every node: each update is taken once through the inbound ledger). Every
update becomes the kit's value (``updates``) and goes to the chat front (``handler.message``
/ ``handler.press``), which routes, checks access, records and queues it; replies come back
through ``TelegramOutbound``. Once it serves, the bot's command menu is set and kept in step
with the agents (``commands_menu``: ``setMyCommands`` per scope, again after
``reload-agents``); a menu Telegram refuses is logged and never stops the gateway.

The bot token is registered with the log redactor before the first request: httpx logs every
request URL, and Telegram's URLs contain the token.

``state`` says what ``/readyz`` reports: ``starting``, ``running``, ``reconnecting: …``,
``standby: …`` (another node polls), ``failed: …`` or ``stopped``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from telegram import Bot, Update
from telegram.error import InvalidToken, NetworkError, TelegramError
from telegram.ext import Application, ApplicationBuilder

from duragent.cluster import run_as_leader
from duragent.config.workspace import TELEGRAM_TOKEN_HELP as TOKEN_HELP
from duragent.config.workspace import TelegramConfig
from duragent.errors import ConfigError, DuragentError
from duragent.frontkit import (
    ButtonPress,
    ChatHandler,
    GatewayChats,
    InboundMessage,
    MediaSource,
    OutboundPort,
    WebhookReceiver,
)
from duragent.gateways.telegram.aiohttp_request import AiohttpRequest
from duragent.gateways.telegram.commands_menu import MenuKeeper
from duragent.gateways.telegram.limits import ChatRateLimiter, RateCounts
from duragent.gateways.telegram.media import MAX_DOWNLOADS, TelegramMedia
from duragent.gateways.telegram.outbound import MAX_TYPING_IN_FLIGHT, TelegramOutbound
from duragent.gateways.telegram.polling import FatalPollingError, poll_updates
from duragent.gateways.telegram.updates import ALLOWED_UPDATES, TelegramBotIdentity, translate
from duragent.gateways.telegram.webhook import TelegramWebhook, webhook_path, webhook_secret
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.observability.metrics import Metrics
from duragent.observability.redact import redact_secrets
from duragent.store.cluster import Cluster

__all__ = ["TelegramGateway", "bot_api_base"]

log = logging.getLogger(__name__)


def bot_api_base(base_url: str | None) -> tuple[str, str]:
    """PTB's ``base_url`` and ``base_file_url`` for a Bot API server address.

    ``http://localhost:8081`` → ``http://localhost:8081/bot`` (PTB appends the token and the
    method, as Telegram's ``/bot<token>/<method>``); a value already ending in ``/bot`` is
    used as it is.
    """
    root = (base_url or "https://api.telegram.org").rstrip("/")
    root = root.removesuffix("/bot")
    return f"{root}/bot", f"{root}/file/bot"


class TelegramGateway:
    """The Telegram front end (see module docstring)."""

    name = "telegram"

    def __init__(
        self,
        config: TelegramConfig,
        handler_for: Callable[[OutboundPort, str, MediaSource], ChatHandler],
        tasks: BackgroundTasks,
        *,
        metrics: Metrics | None = None,
        cluster: Cluster | None = None,
        max_photo_bytes: int | None = None,
    ) -> None:
        """``handler_for(outbound, bot_username, media)`` builds the chat front, bot known.

        ``media`` is how the chats' files are downloaded.

        ``metrics``: where Telegram's 429s and the sends retried after them are counted;
        ``cluster``: with several nodes, long polling runs on the holder of its leader lease;
        ``max_photo_bytes``: of a photo's sizes, the largest within it is taken.
        """
        self._max_photo_bytes = max_photo_bytes
        self._cluster = cluster
        self._config = config
        self._metrics = metrics
        self._handler_for = handler_for
        self._tasks = tasks
        self._app: Application | None = None  # type: ignore[type-arg]
        self._poller: asyncio.Task[None] | None = None
        self._menus: asyncio.Task[None] | None = None
        self._handler: ChatHandler | None = None
        self._identity: TelegramBotIdentity | None = None
        self._typing_bot: Bot | None = None
        self._files_bot: Bot | None = None
        self.state = "stopped"
        self.outbound: TelegramOutbound | None = None
        self.webhook: tuple[str, WebhookReceiver] | None = None
        """Webhook mode: the path the HTTP server must serve and what handles its requests."""

    @property
    def bot_username(self) -> str | None:
        """The bot's @username once started."""
        return self._identity.username if self._identity else None

    def _set_state(self, state: str) -> None:
        self.state = state

    async def start(self) -> None:
        """Connect, learn who the bot is, start receiving updates (``state`` says how it went)."""
        self.state = "starting"
        try:
            await self._start()
        except BaseException as exc:
            if self.state in ("starting", "running"):
                self.state = f"failed: {exc}"
            await self.stop(keep_state=True)
            raise

    async def _start(self) -> None:
        token = self._config.bot_token
        problem = self._config.token_problem()
        if problem or token is None:
            self.state = f"failed: {problem}"
            raise ConfigError(problem or TOKEN_HELP)
        redact_secrets(token)
        base, files = bot_api_base(self._config.base_url)
        app = (
            ApplicationBuilder()
            .token(token)
            .base_url(base)
            .base_file_url(files)
            .rate_limiter(
                ChatRateLimiter(
                    overall_per_second=self._config.max_messages_per_second,
                    group_per_minute=self._config.max_messages_per_minute_per_group,
                    chat_per_second=self._config.max_messages_per_second_per_chat,
                    counts=_counts(self._metrics),
                )
            )
            .request(AiohttpRequest())
            .get_updates_request(
                AiohttpRequest(connections=1, read_timeout=self._config.poll_timeout_seconds + 10.0)
            )
            .updater(None)
            .build()
        )
        self._app = app  # shut down by ``stop`` even if ``initialize`` fails half-way
        try:
            await app.initialize()  # getMe
        except InvalidToken as exc:
            self.state = "failed: Telegram rejected the bot token"
            raise ConfigError(
                f"gateways.telegram: Telegram rejected the bot token ({TOKEN_HELP})"
            ) from exc
        except (NetworkError, TelegramError) as exc:
            self.state = f"failed: cannot reach the Bot API at {base.removesuffix('/bot')}"
            raise DuragentError(
                f"gateways.telegram: cannot reach the Telegram Bot API at "
                f"{base.removesuffix('/bot')} ({exc.message}); check the network or "
                "gateways.telegram.base_url"
            ) from exc
        me = app.bot.bot
        self._identity = TelegramBotIdentity(user_id=me.id, username=me.username or "")
        # "typing…" and file downloads are not messages: bots without the rate limiter (a
        # photo's getFile never takes a reply's place in Telegram's budget), each with a
        # connection pool of its own (a 20 MB download never holds up "typing…")
        typing_bot = self._typing_bot = await _side_bot(token, base, files, MAX_TYPING_IN_FLIGHT)
        files_bot = self._files_bot = await _side_bot(token, base, files, MAX_DOWNLOADS)
        self.outbound = TelegramOutbound(
            app.bot,
            typing_bot=typing_bot,
            delivery_retry_seconds=self._config.delivery_retry_seconds,
        )
        self._handler = self._handler_for(
            self.outbound, self._identity.username, TelegramMedia(files_bot)
        )
        await self._handler.recover()  # recovered turns come first in each chat's line
        if self._config.webhook_url:
            await self._set_webhook(app.bot, token, self._config.webhook_url)
        else:
            await app.bot.delete_webhook()  # getUpdates is refused while a webhook is set
            self._poller = asyncio.create_task(self._poll_once(app.bot), name="telegram-polling")
            log.info("telegram: serving @%s by long polling", self._identity.username)
            self.state = "running"
        if isinstance(self._handler, GatewayChats):  # the menu is the kit's (a test's is not)
            keeper = MenuKeeper(app.bot, self._handler.front)
            self._menus = asyncio.create_task(keeper.run(), name="telegram-menu")

    async def _set_webhook(self, bot: Bot, token: str, url: str) -> None:
        secret = webhook_secret(self._config.webhook_secret, token)
        redact_secrets(secret)
        self.webhook = (webhook_path(url), TelegramWebhook(bot, secret, self._handle))
        await bot.set_webhook(
            url, secret_token=secret, allowed_updates=list(ALLOWED_UPDATES), max_connections=1
        )
        log.info("telegram: serving @%s by webhook at %s", self.bot_username, url)
        self.state = "running"

    async def _poll_once(self, bot: Bot) -> None:
        """Poll here, or, with several nodes, only while this node holds the polling lease.

        Telegram serves one ``getUpdates`` consumer per bot (a second gets 409 Conflict),
        and its offset is the consumers' shared progress: so exactly one node polls. The
        others wait in ``standby`` and take over within a lease when the poller dies.
        """
        if self._cluster is None or not self._cluster.shared:
            await self._poll(bot)
            return
        assert self._identity is not None
        await run_as_leader(
            self._cluster.leaders,
            f"telegram-polling:{self._identity.user_id}",
            lambda: self._poll(bot),
            on_standby=lambda: self._set_state("standby: another node polls Telegram"),
        )

    async def _poll(self, bot: Bot) -> None:
        self._set_state("running")  # a standby node that took over says so at once
        try:
            await poll_updates(
                bot,
                self._handle,
                poll_seconds=self._config.poll_timeout_seconds,
                on_state=self._set_state,
            )
        except FatalPollingError as exc:
            self.state = f"failed: {exc}"
            log.error("telegram: %s; the gateway stopped (%s)", exc, TOKEN_HELP)

    async def _handle(self, update: Update) -> None:
        assert self._identity is not None
        assert self._handler is not None
        value = translate(update, self._identity, max_photo_bytes=self._max_photo_bytes)
        if isinstance(value, InboundMessage):
            await self._handler.message(value)
        elif isinstance(value, ButtonPress):
            await self._handler.press(value)

    async def stop(self, *, keep_state: bool = False) -> None:
        """Stop receiving updates and close the HTTP client."""
        if self._handler is not None:
            await self._handler.close()  # its sweep for chats other nodes left
        for task in (self._menus, self._poller):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._menus = self._poller = None
        app, self._app = self._app, None
        if app is not None:
            await app.shutdown()
            # After a failed ``initialize`` (rejected token) the app never counts as started
            # and its ``shutdown`` does nothing, but the bot's HTTP client is open: close it.
            await app.bot.shutdown()
        for side in (self._typing_bot, self._files_bot):
            if side is not None:
                await side.shutdown()
        self._typing_bot = self._files_bot = None
        if not keep_state:
            self.state = "stopped"


async def _side_bot(token: str, base: str, files: str, connections: int) -> Bot:
    """A bot for calls that are not messages: no rate limiter, its own connections."""
    bot = Bot(
        token, base_url=base, base_file_url=files, request=AiohttpRequest(connections=connections)
    )
    await bot.initialize()
    return bot


def _counts(metrics: Metrics | None) -> RateCounts | None:
    """Telegram's 429s and retries as ``observability.metrics`` counters (None: metrics off)."""
    if metrics is None:
        return None
    return RateCounts(
        rate_limited=metrics.gateway_rate_limited.labels("telegram").inc,
        retried=metrics.gateway_retries.labels("telegram").inc,
    )
