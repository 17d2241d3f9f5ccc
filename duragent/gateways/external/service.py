"""``ExternalGateway``: one ``gateways.external[]`` entry as a service of ``duragent serve``.

Start: resolve the command (a missing or non-executable program is a ``ConfigError`` naming
``gateways.external[i].command``; the runtime lists external gateways as optional, so the
other front ends keep serving) and hand the child to a ``Supervisor``, which keeps it
running by its restart policy. ``start`` does not wait for ``ready``: a gateway may need a
person to scan a QR code first, and HTTP must not wait for that.

Events, in the order the child wrote them:

- ``ready``: the child is connected (``state`` → ``running``); its capabilities are noted
  for the outbound port; a different protocol major version is a warning, as in the
  reference. The first ``ready`` also starts the recovery of what a crash left unfinished
  (``ChatHandler.recover``); messages wait until it is done, so recovered turns come first.
- ``message_received`` / ``callback_query``: translated (``translate``) and handed to the chat
  front, one at a time **per chat** (in order) and concurrently across chats, at most
  ``max_in_flight`` at once: beyond that the reader waits, and so does the child's next
  write (back-pressure instead of memory). The chat front returns once a message is durable;
  the reply comes later through ``ExternalOutbound``. A gateway that listed the ``ack``
  capability is then sent ``ack_message`` (see ``protocol.AckMessage``).
- ``command_ok`` / ``command_error``: the answer to a command, to whoever waits for it (an
  error nobody waits for is logged).
- ``error``: logged; ``fatal: true`` means the gateway cannot go on: it is stopped, not
  restarted, and ``state`` says ``failed: <code>: <message>``.
- ``auth_required`` / ``auth_success``: what the operator must do is logged (the QR code, the
  pair code) and shown in ``state`` until the login succeeds.
- ``pong``, ``shutdown`` (the supervisor acts on the exit) and unknown types: logged at debug.

``state`` for ``/readyz``: ``starting``, ``running``, ``waiting for login: …``,
``restarting in 4s: exited with code 1``, ``failed: …``, ``stopped: …``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from duragent.config.workspace import ExternalGatewayConfig
from duragent.frontkit import (
    ButtonPress,
    ChatHandler,
    InboundBusyError,
    InboundMessage,
    OutboundPort,
    WebhookReceiver,
)
from duragent.gateways.external import protocol
from duragent.gateways.external.launch import Launch
from duragent.gateways.external.outbound import ACK_TIMEOUT, WAIT_FOR_GATEWAY, ExternalOutbound
from duragent.gateways.external.supervisor import (
    GRACE_SECONDS,
    INITIAL_BACKOFF,
    MAX_ATTEMPTS,
    MAX_BACKOFF,
    STAY_UP_SECONDS,
    GatewayDownError,
    Supervisor,
)
from duragent.gateways.external.translate import message_of, press_of
from duragent.lifecycle.tasks import BackgroundTasks

__all__ = ["DEFAULT_TIMINGS", "ExternalChatHandler", "ExternalGateway", "Timings"]

log = logging.getLogger(__name__)

MAX_IN_FLIGHT = 256


class ExternalChatHandler(ChatHandler, Protocol):
    """The kit's chat front, told the bot's name once the gateway says it (``ready``)."""

    def bot_named(self, username: str) -> None:
        """The bot's name on the platform is known (``/reset@<name>`` is then a command)."""
        ...


@dataclass(frozen=True, slots=True)
class Timings:
    """Supervision and confirmation times (the reference's by default; short in tests)."""

    initial_backoff: float = INITIAL_BACKOFF
    max_backoff: float = MAX_BACKOFF
    max_attempts: int = MAX_ATTEMPTS
    grace: float = GRACE_SECONDS
    stay_up: float = STAY_UP_SECONDS
    ack_timeout: float = ACK_TIMEOUT
    wait_for_gateway: float = WAIT_FOR_GATEWAY


DEFAULT_TIMINGS = Timings()


class ExternalGateway:
    """One external gateway (see module docstring)."""

    webhook: tuple[str, WebhookReceiver] | None = None

    def __init__(
        self,
        config: ExternalGatewayConfig,
        index: int,
        config_dir: Path,
        handler_for: Callable[[OutboundPort], ExternalChatHandler],
        tasks: BackgroundTasks,
        *,
        timings: Timings = DEFAULT_TIMINGS,
        max_in_flight: int = MAX_IN_FLIGHT,
    ) -> None:
        """``handler_for(outbound)`` builds the chat front (once, at start)."""
        self.name = config.name
        self.state = "stopped"
        self._config = config
        self._index = index
        self._config_dir = config_dir
        self._handler_for = handler_for
        self._tasks = tasks
        self._timings = timings
        self._running = asyncio.Event()
        self._recovered = asyncio.Event()
        self._recovery_started = False
        self._slots = asyncio.Semaphore(max_in_flight)
        self._tails: dict[str, asyncio.Task[None]] = {}
        self._handler: ExternalChatHandler | None = None
        self.supervisor: Supervisor | None = None
        self.outbound: ExternalOutbound | None = None
        self.ready: protocol.Ready | None = None
        """The child's last ``ready`` (its name for itself, version, capabilities)."""
        self.handled = 0
        """Messages and presses the chat front has taken (recorded, dropped or acted on)."""

    async def start(self) -> None:
        """Resolve the command and start the child (``state`` reports what follows)."""
        self.state = "starting"
        try:
            launch = Launch.of(self._config, self._index, self._config_dir)
        except Exception as exc:
            self.state = f"failed: {exc}"
            raise
        t = self._timings
        supervisor = Supervisor(
            launch,
            self._event,
            restart=self._config.restart,
            on_state=self._child_state,
            initial_backoff=t.initial_backoff,
            max_backoff=t.max_backoff,
            max_attempts=t.max_attempts,
            grace=t.grace,
            stay_up=t.stay_up,
        )
        self.outbound = ExternalOutbound(
            self.name,
            supervisor.send,
            self._running,
            supervisor.finished,
            ack_timeout=t.ack_timeout,
            wait_for_gateway=t.wait_for_gateway,
            delivery_retry_seconds=self._config.delivery_retry_seconds,
        )
        self._handler = self._handler_for(self.outbound)
        self.supervisor = supervisor
        supervisor.start()
        log.info("gateway %s: started %s", self.name, " ".join(launch.argv))

    async def stop(self) -> None:
        """Stop the child (``shutdown``, then a kill after the grace period)."""
        if self._handler is not None:
            await self._handler.close()  # its sweep for chats other nodes left
        supervisor, self.supervisor = self.supervisor, None
        self._running.clear()
        if supervisor is not None:
            await supervisor.stop()
        if self.outbound is not None:
            self.outbound.disconnected()
        self.state = "stopped"

    # --- events from the child -------------------------------------------------------------

    def _child_state(self, state: str) -> None:
        """The supervisor's news: every one means no ready child runs right now."""
        self._running.clear()
        if self.outbound is not None:
            self.outbound.disconnected()
        if not self.state.startswith("failed:"):  # a fatal error's reason stays shown
            self.state = state

    async def _event(self, event: protocol.Event) -> None:
        match event:
            case protocol.MessageReceived():
                self._connected_without_ready()
                msg = message_of(self.name, event)
                await self._dispatch(msg.chat_id, lambda: self._message(msg))
            case protocol.CallbackQuery():
                self._connected_without_ready()
                press = press_of(self.name, event)
                await self._dispatch(press.chat_id, lambda: self._press(press))
            case protocol.CommandOk() | protocol.CommandError():
                taken = self.outbound is not None and self.outbound.settle(event)
                if not taken and isinstance(event, protocol.CommandError):
                    log.error(
                        "gateway %s: command %s failed: %s: %s",
                        self.name,
                        event.request_id,
                        event.code,
                        event.message,
                    )
            case protocol.Ready():
                self._on_ready(event)
            case protocol.ErrorEvent():
                self._on_error(event)
            case protocol.AuthRequired():
                self.state = f"waiting for login: {event.describe()}"
                log.warning("gateway %s needs a login: %s", self.name, event.describe())
            case protocol.AuthSuccess():
                log.info("gateway %s: login succeeded", self.name)
                self.state = "running" if self._running.is_set() else "starting"
            case _:
                log.debug("gateway %s: %s event ignored", self.name, event.type)

    def _connected_without_ready(self) -> None:
        """A chat event before any ``ready``: the child is connected.

        The reference never required ``ready``; replies may go out and recovery may start.
        """
        if self._running.is_set():
            return
        log.warning("gateway %s sent a chat event before 'ready'; taking it as ready", self.name)
        self._connected()

    def _on_ready(self, event: protocol.Ready) -> None:
        self.ready = event
        if protocol.major_version(event.version) != protocol.major_version(
            protocol.PROTOCOL_VERSION
        ):
            log.warning(
                "gateway %s speaks protocol %s; duragent speaks %s (going on; expect surprises)",
                self.name,
                event.version,
                protocol.PROTOCOL_VERSION,
            )
        assert self.outbound is not None
        self.outbound.capabilities = frozenset(event.capabilities) or None
        log.info(
            "gateway %s ready (%s %s; capabilities: %s)",
            self.name,
            event.gateway,
            event.version,
            ", ".join(event.capabilities) or "none listed",
        )
        username = self._config.bot_username or event.bot_username
        if self._handler is not None and username:
            self._handler.bot_named(username)
        self._connected()

    def _connected(self) -> None:
        """A child is connected: commands may go out; the first time, recovery starts."""
        self.state = "running"
        self._running.set()
        if self._handler is not None and not self._recovery_started:
            self._recovery_started = True
            self._tasks.spawn(self._recover(self._handler), name=f"gateway-{self.name}-recovery")

    async def _recover(self, handler: ExternalChatHandler) -> None:
        try:
            await handler.recover()
        except Exception:
            log.exception("gateway %s: recovery failed; taking new messages anyway", self.name)
        finally:
            self._recovered.set()

    def _on_error(self, event: protocol.ErrorEvent) -> None:
        if not event.fatal:
            log.warning("gateway %s reports %s: %s", self.name, event.code, event.message)
            return
        log.error(
            "gateway %s reports a fatal error, %s: %s; it is stopped (fix it and restart duragent)",
            self.name,
            event.code,
            event.message,
        )
        self.state = f"failed: {event.code}: {event.message}"
        self._running.clear()
        supervisor = self.supervisor
        if supervisor is not None:  # not from inside its own reader: a task of its own
            self._tasks.spawn(supervisor.stop(), name=f"gateway-{self.name}-fatal")

    # --- handing messages to the chat front -------------------------------------------------

    async def _dispatch(self, chat_id: str, work: Callable[[], Awaitable[None]]) -> None:
        """Run ``work`` after the chat's earlier events; waits while too many are in flight."""
        await self._slots.acquire()
        previous = self._tails.get(chat_id)
        task = self._tasks.spawn(
            self._in_turn(chat_id, previous, work), name=f"gateway-{self.name}-{chat_id}"
        )
        self._tails[chat_id] = task

    async def _in_turn(
        self,
        chat_id: str,
        previous: asyncio.Task[None] | None,
        work: Callable[[], Awaitable[None]],
    ) -> None:
        try:
            if previous is not None:
                await asyncio.wait([previous])
            await self._recovered.wait()
            await work()
        except InboundBusyError as exc:  # another node records it (and acknowledges it)
            log.info("gateway %s: %s", self.name, exc)
        except Exception:
            log.exception("gateway %s: handling an event of chat %s failed", self.name, chat_id)
        finally:
            self.handled += 1
            self._slots.release()
            if self._tails.get(chat_id) is asyncio.current_task():
                del self._tails[chat_id]

    async def _message(self, msg: InboundMessage) -> None:
        assert self._handler is not None
        await self._handler.message(msg)
        await self._acknowledge(msg)

    async def _acknowledge(self, msg: InboundMessage) -> None:
        """Tell a gateway that asked for it (``ack``) that ``msg`` is taken for good.

        Only after the chat front returned: the message is recorded (or was decided on:
        dropped by an access rule, a duplicate). A failed handling sends nothing, so the
        gateway sends the message again after the restart that follows. Best effort: when
        the child is gone, the next one is sent the message again and it is answered once.
        """
        ready = self.ready
        supervisor = self.supervisor
        if ready is None or supervisor is None or protocol.ACK_CAPABILITY not in ready.capabilities:
            return
        try:
            await supervisor.send(protocol.AckMessage(msg.message_id, msg.chat_id))
        except GatewayDownError:
            log.debug("gateway %s: no child to acknowledge %s to", self.name, msg.message_id)

    async def _press(self, press: ButtonPress) -> None:
        assert self._handler is not None
        await self._handler.press(press)
