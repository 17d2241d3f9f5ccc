"""``DiscordGateway``: the Discord front end as one service of ``duragent serve``.

Start: check the token's shape, register it with the log redactor, log in over REST
(``/users/@me``: a rejected token is a clear error naming ``gateways.discord.bot_token``),
then connect discord.py's gateway websocket with the Message Content intent (without it the
bot cannot read what people write in guild channels; Discord closes the connection with 4014
when the application has not been granted it, and that is a clear error naming the portal
switch). The runtime lists this service as optional, so HTTP and other front ends keep
serving when it fails. Once Discord says ``READY`` the chat front recovers what a crash left
(``recover_chats``) and then takes messages.

Messages arrive as discord.py events, each in a task of its own; ``ChatLanes`` hands a chat's
messages to the kit one at a time in arrival order (different chats go concurrently), so a
chat's messages are recorded in the order they were written. Unlike Telegram, Discord does not
send a message again that the bot did not confirm: a message that arrives while the store
cannot write is logged and lost.

Reconnects, resumes and rate limits are discord.py's. ``state`` says what ``/readyz``
reports: ``starting``, ``connecting: …``, ``running``, ``reconnecting: …``, ``failed: …`` or
``stopped``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import aiohttp
import discord

from duragent.config.workspace import DISCORD_TOKEN_HELP as TOKEN_HELP
from duragent.config.workspace import DiscordConfig
from duragent.errors import ConfigError, DuragentError
from duragent.frontkit import (
    PAUSES,
    ChatHandler,
    InboundBusyError,
    MediaSource,
    OutboundPort,
    WebhookReceiver,
    record_or_tell,
)
from duragent.gateways.discord.buttons import ApprovalButton
from duragent.gateways.discord.endpoints import DISCORD_API, use_api
from duragent.gateways.discord.lanes import ChatLanes
from duragent.gateways.discord.media import DiscordMedia
from duragent.gateways.discord.messages import DiscordBotIdentity, press_of, translate
from duragent.gateways.discord.outbound import DiscordOutbound
from duragent.gateways.discord.rate_limits import RateLimitCounter
from duragent.lifecycle.tasks import BackgroundTasks
from duragent.observability.metrics import Metrics
from duragent.observability.redact import redact_secrets

__all__ = ["INTENT_HELP", "DiscordGateway", "intents"]

log = logging.getLogger(__name__)

GUILD_READY_SECONDS = 2.0
"""After READY, how long discord.py waits for another guild to arrive before it says ready."""
READY_SECONDS = 30.0
"""How long ``start`` waits for ``READY`` before it returns and lets discord.py keep trying."""

INTENT_HELP = (
    "turn on 'Message Content Intent' in the Discord Developer Portal (Applications → your "
    "app → Bot → Privileged Gateway Intents); without it the bot cannot read messages"
)


HandlerFor = Callable[[OutboundPort, str, Callable[[str], bool], MediaSource], ChatHandler]
"""``(outbound, bot username, is_group(chat_id), media)`` → the chat front, once the bot is
known (``media``: how attachments are downloaded)."""


# The bot never joins voice: discord.py's warnings about missing voice libraries are noise.
discord.VoiceClient.warn_nacl = False
discord.VoiceClient.warn_dave = False


def intents() -> discord.Intents:
    """Guild and DM messages, with their text (the privileged Message Content intent)."""
    wanted = discord.Intents.default()
    wanted.message_content = True
    return wanted


class _Client(discord.Client):
    """discord.py's client, its events handed to the gateway."""

    def __init__(self, gateway: DiscordGateway, guild_ready_seconds: float) -> None:
        super().__init__(intents=intents(), guild_ready_timeout=guild_ready_seconds)
        self._gateway = gateway

    async def setup_hook(self) -> None:
        self.add_dynamic_items(ApprovalButton)  # presses on any approval message, ever sent

    async def on_ready(self) -> None:
        self._gateway._connected()

    async def on_resumed(self) -> None:
        self._gateway._connected()

    async def on_disconnect(self) -> None:
        self._gateway._disconnected()

    async def on_message(self, message: discord.Message) -> None:
        await self._gateway._on_message(message)

    async def take_press(self, interaction: discord.Interaction[Any], custom_id: str) -> None:
        await self._gateway._on_press(interaction, custom_id)


class DiscordGateway:
    """The Discord front end (see module docstring)."""

    name = "discord"

    def __init__(
        self,
        config: DiscordConfig,
        handler_for: HandlerFor,
        tasks: BackgroundTasks,
        *,
        guild_ready_seconds: float = GUILD_READY_SECONDS,
        metrics: Metrics | None = None,
    ) -> None:
        self._config = config
        self._rate_limits = (
            RateLimitCounter(
                metrics.gateway_rate_limited.labels("discord").inc,
                metrics.gateway_retries.labels("discord").inc,
            )
            if metrics is not None
            else None
        )
        self._guild_ready_seconds = guild_ready_seconds
        self._handler_for = handler_for
        self._tasks = tasks
        self._client: _Client | None = None
        self._connection: asyncio.Task[None] | None = None
        self._serving: asyncio.Task[None] | None = None
        self._restore_api: Callable[[], None] | None = None
        self._handler: ChatHandler | None = None
        self._identity: DiscordBotIdentity | None = None
        self._ready = asyncio.Event()
        self._open = asyncio.Event()
        self._lanes = ChatLanes()
        self.taken = 0
        """Messages and presses handed to the kit and done with (tests wait on it)."""
        self.unsaved_pauses: tuple[float, ...] = PAUSES
        """Pauses before recording a message again while storage refuses it (``unsaved``)."""
        self.state = "stopped"
        self.outbound: DiscordOutbound | None = None
        self.webhook: tuple[str, WebhookReceiver] | None = None
        """Discord pushes events over its websocket: no webhook path."""

    @property
    def bot_username(self) -> str | None:
        """The bot's username once logged in."""
        return self._identity.username if self._identity else None

    async def start(self) -> None:
        """Log in, connect, recover, take messages (``state`` says how it went)."""
        self.state = "starting"
        try:
            await self._start()
        except BaseException as exc:
            if not self.state.startswith("failed"):
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
        if self._rate_limits is not None:
            self._rate_limits.attach()
        self._restore_api = use_api(self._config.base_url)
        where = self._config.base_url or DISCORD_API
        self._ready, self._open = asyncio.Event(), asyncio.Event()
        client = self._client = _Client(self, self._guild_ready_seconds)
        try:
            await client.login(token)  # GET /users/@me, then the application
        except discord.LoginFailure as exc:
            self.state = "failed: Discord rejected the bot token"
            raise ConfigError(
                f"gateways.discord: Discord rejected the bot token ({TOKEN_HELP})"
            ) from exc
        except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
            self.state = f"failed: cannot reach Discord at {where}"
            raise DuragentError(
                f"gateways.discord: cannot reach Discord at {where} ({exc}); check the network "
                "or gateways.discord.base_url"
            ) from exc
        assert client.user is not None
        self._identity = DiscordBotIdentity(user_id=client.user.id, username=client.user.name)
        self.outbound = DiscordOutbound(
            client, delivery_retry_seconds=self._config.delivery_retry_seconds
        )
        self._handler = self._handler_for(
            self.outbound, client.user.name, self._is_group, DiscordMedia(client)
        )
        self._connection = asyncio.create_task(self._connect(client), name="discord-gateway")
        self._serving = asyncio.create_task(self._serve_when_ready(), name="discord-ready")
        done, _ = await asyncio.wait(
            (self._connection, self._serving),
            timeout=READY_SECONDS,
            return_when=asyncio.FIRST_COMPLETED,
        )
        if self._connection in done:
            self._connection.result()  # raises why it ended (the intent, the token)
            raise DuragentError("gateways.discord: the connection to Discord ended at once")
        if self._serving in done:
            self._serving.result()
        else:
            self.state = "connecting: waiting for Discord's gateway to say READY"
        self._connection.add_done_callback(self._connection_ended)

    async def _connect(self, client: _Client) -> None:
        """discord.py's connection loop, its fatal ends as errors naming the fix."""
        try:
            await client.connect(reconnect=True)
        except discord.PrivilegedIntentsRequired as exc:
            self.state = "failed: Discord refused the Message Content intent"
            raise ConfigError(
                f"gateways.discord: Discord refused the Message Content intent: {INTENT_HELP}"
            ) from exc
        except discord.ConnectionClosed as exc:
            if exc.code != 4004:
                self.state = f"failed: Discord closed the connection ({exc.code})"
                raise
            self.state = "failed: Discord rejected the bot token"
            raise ConfigError(
                f"gateways.discord: Discord rejected the bot token ({TOKEN_HELP})"
            ) from exc

    def _connection_ended(self, task: asyncio.Task[None]) -> None:
        """After start: a connection that ends for good is logged and shown in ``state``."""
        exc = None if task.cancelled() else task.exception()
        if exc is None:
            return  # closed by ``stop``
        if not self.state.startswith("failed"):
            self.state = f"failed: {exc}"
        log.error("discord: %s; the gateway stopped", exc)

    async def _serve_when_ready(self) -> None:
        await self._ready.wait()
        assert self._handler is not None
        await self._handler.recover()  # recovered turns come first in each chat's line
        self._open.set()
        self.state = "running"
        log.info("discord: serving %s", self.bot_username)

    def _connected(self) -> None:
        self._ready.set()
        if self._open.is_set():
            self.state = "running"

    def _disconnected(self) -> None:
        if self._open.is_set() and not self.state.startswith("failed"):
            self.state = "reconnecting: the connection to Discord dropped"

    def _is_group(self, chat_id: str) -> bool:
        """Whether a chat is a guild channel (as far as discord.py's cache knows)."""
        client = self._client
        channel = client.get_channel(int(chat_id)) if client and chat_id.isdigit() else None
        return channel is not None and getattr(channel, "guild", None) is not None

    async def _on_message(self, message: discord.Message) -> None:
        assert self._identity is not None
        assert self._handler is not None
        value = translate(message, self._identity)
        if value is None:
            return
        async with self._lanes.turn(value.chat_id):
            await self._open.wait()
            if self._client is None:
                return  # stopped before it could be taken
            handler, outbound = self._handler, self.outbound
            assert outbound is not None
            try:  # Discord sends it once: held while storage refuses it, or the chat is told
                await record_or_tell(
                    lambda: handler.message(value), value, outbound, self.unsaved_pauses
                )
            except InboundBusyError:  # another node (each receives every event) takes it
                log.debug("discord: message %s is taken by another node", value.message_id)
            except Exception:
                log.exception(
                    "discord: message %s in %s could not be handled and is lost",
                    value.message_id,
                    value.chat.target,
                )
            finally:
                self.taken += 1

    async def _on_press(self, interaction: discord.Interaction[Any], custom_id: str) -> None:
        assert self._handler is not None
        assert self.outbound is not None
        press = press_of(interaction, custom_id)
        if press is None:
            return
        self.outbound.hold(interaction)
        await self._open.wait()
        if self._client is None:
            return  # stopped before it could be taken
        try:
            await self._handler.press(press)
        except InboundBusyError:  # another node (each receives every event) answers it
            log.debug("discord: press %s is taken by another node", press.callback_id)
        finally:
            self.outbound.release(press.callback_id)
            self.taken += 1

    async def stop(self, *, keep_state: bool = False) -> None:
        """Close the connection and the HTTP client."""
        if self._handler is not None:
            await self._handler.close()  # its sweep for chats other nodes left
        if self._rate_limits is not None:
            self._rate_limits.detach()
        if self._connection is not None:
            self._connection.remove_done_callback(self._connection_ended)  # not a failure
        client, self._client = self._client, None
        self._open.set()  # events waiting for recovery see the gateway stopped, and return
        if self.outbound is not None:  # a send cut by the close may have been posted already
            await self.outbound.under_way.ended()
        if client is not None:
            await client.close()  # ends ``connect``
        tasks, self._serving, self._connection = (self._serving, self._connection), None, None
        for task in tasks:
            if task is None:
                continue
            task.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await task
        restore, self._restore_api = self._restore_api, None
        if restore is not None:
            restore()
        if not keep_state:
            self.state = "stopped"
