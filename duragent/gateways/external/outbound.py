"""``ExternalOutbound``: the kit's ``OutboundPort`` as protocol commands to a gateway's child.

Each kit action is one command; the gateway formats and splits for its platform, so the text
goes out as the Markdown the model wrote (the reference does the same). The protocol names
no message length, so a text is one piece (``pieces``): the kit records it as delivered once
the gateway confirms all of it, and a crash while the gateway sends its messages sends it
whole again. Approvals are a ``send_message`` with the kit's three buttons as an
``inline_keyboard``.

**Confirmation.** A reply is recorded as delivered only once the gateway confirms it, so a
command is written and then its ``command_ok`` (or ``command_error``) awaited, matched by
``request_id``: ``command_error`` raises ``GatewayCommandError`` with the gateway's code, and
the reply stays undelivered (sent again by a later recovery). The reference never waited for
the answer, so a gateway written for it may not send one: when the first command goes
unanswered for ``ack_timeout`` seconds and the gateway has never confirmed anything, it is
taken to be such a gateway (one warning) and later commands count as done once written.

**While the child restarts**, a command waits up to ``wait_for_gateway`` seconds for it to be
running again (a reply written during a crash still arrives); past that, or once the
gateway has given up, ``GatewayDownError``. A command whose child died before taking it or
before answering is sent once more to the next child (it may have reached the platform: at
least once, as everywhere in the kit). An answer that does not come within ``ack_timeout``
from a gateway that does confirm is ``GatewayCommandError`` with code ``timeout``.

**Refused for a while.** A ``command_error`` whose code says "not now" (``BUSY_CODES``:
``rate_limited``, ``timeout``, ``network_error``, ``server_error``) and a child that is not
running (while it is to run again) are ``PlatformBusyError`` to the kit's ``Outbox``: the
message waits in its chat's line and is sent again, with a growing pause, until
``delivery_retry_seconds`` of the gateway's config have passed. Any other code is a refusal
of the message itself and is raised at once.

**Capabilities.** A gateway that listed capabilities in ``ready`` and left out ``typing`` gets
no ``send_typing`` (a courtesy), one without ``edit`` no ``edit_message`` (the approval's
text stays; the decision is in the toast), and one without ``media`` no ``send_media`` (a
file is refused, and the kit says so in the chat). Typing is never confirmed (it has no
``request_id``): it is written or dropped, never waited for.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import logging
import os
from collections.abc import Awaitable, Callable

from duragent.errors import DuragentError
from duragent.frontkit import ChatRef, OutgoingFile, SentMessage, approval_buttons, approval_prompt
from duragent.frontkit.outbox import DELIVERY_RETRY_SECONDS, Outbox, PlatformBusyError
from duragent.gateways.external.protocol import (
    AnswerCallbackQuery,
    Command,
    CommandError,
    CommandOk,
    EditMessage,
    InlineButton,
    SendMedia,
    SendMessage,
    SendTyping,
)
from duragent.gateways.external.supervisor import GatewayDownError

__all__ = ["ExternalOutbound", "GatewayCommandError"]

log = logging.getLogger(__name__)

ACK_TIMEOUT = 30.0
WAIT_FOR_GATEWAY = 30.0
BUSY_CODES = frozenset({"rate_limited", "timeout", "network_error", "server_error"})
"""``command_error`` codes that mean "try again later" (the message is waited out)."""


class GatewayCommandError(DuragentError):
    """The gateway refused a command (``command_error``) or did not answer it in time.

    ``code`` is the protocol's (``rate_limited``, ``chat_not_found``…) or ``timeout``.
    """

    def __init__(self, gateway: str, command: str, code: str, message: str) -> None:
        self.code = code
        super().__init__(f"gateway '{gateway}' refused {command}: {code}: {message}")


class ExternalOutbound:
    """Sends to a gateway's chats through its child (see module docstring)."""

    def __init__(
        self,
        name: str,
        send: Callable[[Command], Awaitable[None]],
        running: asyncio.Event,
        gone: asyncio.Event,
        *,
        ack_timeout: float = ACK_TIMEOUT,
        wait_for_gateway: float = WAIT_FOR_GATEWAY,
        delivery_retry_seconds: float = DELIVERY_RETRY_SECONDS,
    ) -> None:
        """A port over ``send``, which writes one command to the running child.

        ``running`` is set while a ready child runs; ``gone`` once no child will run again;
        ``delivery_retry_seconds``: how long a refused message is retried (``Outbox``).
        """
        self._name = name
        self._send = send
        self._running = running
        self._gone = gone
        self._ack_timeout = ack_timeout
        self._wait = wait_for_gateway
        self._waiting: dict[str, asyncio.Future[CommandOk | CommandError]] = {}
        self._ids = itertools.count(1)
        self._prefix = f"{os.getpid():x}-"
        self.confirms: bool | None = None
        """Whether the gateway answers commands: unknown (None) until it does or does not."""
        self.capabilities: frozenset[str] | None = None
        """What the gateway's ``ready`` listed; None when it listed nothing (assume all)."""
        self._child_ended = asyncio.Event()
        """Set (and replaced) each time a child ends: a retry waits for the next child."""
        self.outbox = Outbox(
            name,
            self._notice,
            retry_for=delivery_retry_seconds,
            setting=f"gateways.external[name={name}].delivery_retry_seconds",
        )

    # --- answers from the gateway (called by the service for each event) ---------------------

    def settle(self, event: CommandOk | CommandError) -> bool:
        """Hand a command's answer to whoever waits for it; False when nobody does."""
        self.confirms = True
        waiter = self._waiting.pop(event.request_id, None)
        if waiter is None or waiter.done():
            return False
        waiter.set_result(event)
        return True

    def disconnected(self) -> None:
        """The child ended: commands waiting for an answer will not get one."""
        ended, self._child_ended = self._child_ended, asyncio.Event()
        ended.set()
        waiting, self._waiting = self._waiting, {}
        for waiter in waiting.values():
            if not waiter.done():
                waiter.set_exception(
                    GatewayDownError(f"gateway '{self._name}' exited before answering")
                )

    # --- the port -------------------------------------------------------------------------

    def pieces(self, text: str) -> tuple[str, ...]:
        """``text`` whole: the gateway splits it, past what duragent sees (module docstring)."""
        return (text,) if text.strip() else ()

    async def send_text(
        self, chat: ChatRef, text: str, *, reply_to: str | None = None
    ) -> SentMessage:
        """Send ``text`` (the gateway formats and splits it); the message as confirmed."""
        request_id = self._request_id()
        command = SendMessage(request_id, chat.chat_id, text, reply_to=reply_to)
        ok = await self.outbox.send(chat, lambda: self._busy_as_such(command, request_id))
        return SentMessage(chat, ok.message_id if ok and ok.message_id else request_id)

    async def send_file(
        self, chat: ChatRef, file: OutgoingFile, *, reply_to: str | None = None
    ) -> SentMessage:
        """A ``send_media`` of the bytes (``base64`` with type and name) and the caption.

        The protocol has no kind and no reply for a medium: the gateway sends it by its type.
        A gateway whose ``ready`` left out ``media`` is not asked (``GatewayCommandError``
        ``unsupported``: the kit tells the chat instead).
        """
        if not self._can("media"):
            raise GatewayCommandError(
                self._name, "send_media", "unsupported", "the gateway did not list 'media'"
            )
        request_id = self._request_id()
        medium = {
            "source": "base64",
            "data": base64.b64encode(file.data).decode("ascii"),
            "mime_type": file.mime,
            "filename": file.name,
        }
        command = SendMedia(request_id, chat.chat_id, medium, caption=file.caption)
        ok = await self.outbox.send(chat, lambda: self._busy_as_such(command, request_id))
        return SentMessage(chat, ok.message_id if ok and ok.message_id else request_id)

    async def send_typing(self, chat: ChatRef) -> None:
        """Show "typing…" for 5 s, if the gateway can and is running (never waited for)."""
        if not self._can("typing") or not self._running.is_set():
            return
        await self._write(SendTyping(chat.chat_id, 5))

    async def ask_approval(
        self, chat: ChatRef, *, session_id: str, call_id: str, command: str
    ) -> SentMessage:
        """The approval prompt with Allow Once | Allow Always | Deny as inline buttons."""
        row = tuple(InlineButton(b.label, b.data) for b in approval_buttons(call_id))
        request_id = self._request_id()
        message = SendMessage(
            request_id, chat.chat_id, approval_prompt(command), inline_keyboard=(row,)
        )
        ok = await self.outbox.send(chat, lambda: self._busy_as_such(message, request_id))
        return SentMessage(chat, ok.message_id if ok and ok.message_id else request_id)

    async def edit(self, message: SentMessage, text: str) -> None:
        """Replace an earlier message's text (skipped when the gateway cannot edit)."""
        if not self._can("edit"):
            return
        request_id = self._request_id()
        chat_id = message.chat.chat_id
        await self._confirmed(
            EditMessage(request_id, chat_id, message.message_id, text), request_id
        )

    async def answer_button(self, callback_id: str, text: str | None = None) -> None:
        """Answer a button press (a toast with ``text``, if given)."""
        request_id = self._request_id()
        await self._confirmed(AnswerCallbackQuery(request_id, callback_id, text), request_id)

    # --- plumbing -------------------------------------------------------------------------

    async def _notice(self, chat: ChatRef, text: str) -> None:
        """The kit's one-time notice that a message was given up (tried once)."""
        request_id = self._request_id()
        await self._confirmed(SendMessage(request_id, chat.chat_id, text), request_id)

    async def _busy_as_such(self, command: Command, request_id: str) -> CommandOk | None:
        """``_confirmed``, with "not now" raised as the kit's ``PlatformBusyError``."""
        try:
            return await self._confirmed(command, request_id)
        except GatewayCommandError as exc:
            if exc.code in BUSY_CODES:
                raise PlatformBusyError(str(exc)) from exc
            raise
        except GatewayDownError as exc:
            if self._gone.is_set():
                raise
            raise PlatformBusyError(str(exc)) from exc

    def _request_id(self) -> str:
        return f"{self._prefix}{next(self._ids)}"

    def _can(self, capability: str) -> bool:
        return self.capabilities is None or capability in self.capabilities

    async def _write(self, command: Command) -> None:
        await self._send(command)

    async def _confirmed(self, command: Command, request_id: str) -> CommandOk | None:
        """Write ``command`` once the gateway runs; its ``command_ok`` (None: not confirmed).

        A child that died before taking the line, or before answering it, gets the command
        again from its successor, once: at least once, as the kit promises across crashes.
        """
        ended = self._child_ended
        try:
            return await self._confirmed_once(command, request_id)
        except GatewayDownError:
            if self._gone.is_set():
                raise
        # the write failed or the child died unanswering: wait until the supervisor has seen
        # that child end (it may still look running for a moment), then try its successor
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._wait):
                await ended.wait()
        log.info("gateway %s: sending %s again after a restart", self._name, request_id)
        return await self._confirmed_once(command, request_id)

    async def _confirmed_once(self, command: Command, request_id: str) -> CommandOk | None:
        await self._until_running()
        if self.confirms is False:
            await self._write(command)
            return None
        waiter: asyncio.Future[CommandOk | CommandError]
        waiter = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = waiter
        kind = str(command.wire()["type"])
        try:
            await self._write(command)
            async with asyncio.timeout(self._ack_timeout):
                answer = await waiter
        except TimeoutError:
            if self.confirms is None:  # never answered anything: a fire-and-forget gateway
                self.confirms = False
                log.warning(
                    "gateway %s does not answer commands (no command_ok within %gs): replies "
                    "are taken as delivered once written",
                    self._name,
                    self._ack_timeout,
                )
                return None
            raise GatewayCommandError(
                self._name, kind, "timeout", f"no answer within {self._ack_timeout:g}s"
            ) from None
        finally:
            self._waiting.pop(request_id, None)
        if isinstance(answer, CommandError):
            raise GatewayCommandError(self._name, kind, answer.code, answer.message)
        return answer

    async def _until_running(self) -> None:
        if self._running.is_set():
            return
        if not self._gone.is_set():
            running = asyncio.ensure_future(self._running.wait())
            gone = asyncio.ensure_future(self._gone.wait())
            try:
                await asyncio.wait(
                    (running, gone), timeout=self._wait, return_when="FIRST_COMPLETED"
                )
            finally:
                running.cancel()
                gone.cancel()
        if not self._running.is_set():
            why = "stopped" if self._gone.is_set() else f"not been running for {self._wait:g}s"
            raise GatewayDownError(f"gateway '{self._name}' has {why}")
