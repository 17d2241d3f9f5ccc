"""The gateway plugin protocol ``v1alpha1``: one JSON object per line, tagged by ``type``.

The reference's wire format, field for field, so a gateway written for it runs here
unchanged. duragent writes **commands** to the child's stdin and reads **events** from its
stdout; stderr is the child's log. Commands are built from the dataclasses below
(``to_line``); events are read with ``parse_event``, which returns ``Unknown`` for a ``type``
it does not know (a newer gateway's event is ignored, not an error) and raises
``ProtocolError`` for a line that is not a well-formed event (logged and skipped by the
caller). Optional fields are left out of a command when unset, as the reference does.

Leniencies on reading, each harmless to a gateway that follows the protocol: a
``message_received`` whose ``content`` has a ``type`` we do not know is kept (as ``unknown``
content, answered politely) instead of being thrown away whole; ``routing`` extras that are
not strings are turned into text.

One addition, opt-in: ``ack_message`` (``AckMessage``) for a gateway that lists the ``ack``
capability, so it can deliver at least once across a crash of duragent.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

__all__ = [
    "ACK_CAPABILITY",
    "CAPABILITIES",
    "PROTOCOL_VERSION",
    "AckMessage",
    "AnswerCallbackQuery",
    "AuthRequired",
    "AuthSuccess",
    "CallbackQuery",
    "Command",
    "CommandError",
    "CommandOk",
    "DeleteMessage",
    "EditMessage",
    "ErrorEvent",
    "Event",
    "InlineButton",
    "MessageReceived",
    "Ping",
    "Pong",
    "ProtocolError",
    "Ready",
    "SendMedia",
    "SendMessage",
    "SendTyping",
    "Shutdown",
    "ShutdownEvent",
    "Unknown",
    "major_version",
    "parse_event",
]

PROTOCOL_VERSION = "v1alpha1"
CAPABILITIES = ("media", "edit", "delete", "typing", "reply", "inline_keyboard", "ack")
"""What a gateway may say it can do in ``ready.capabilities`` (the reference's six, and
``ack``, ours: see ``AckMessage``)."""


class ProtocolError(ValueError):
    """A line from a gateway that is not a well-formed event (logged and skipped)."""


def major_version(version: str) -> str:
    """``v1alpha1`` → ``v1``; a version without a ``v<digits>`` head is itself."""
    digits = ""
    for ch in version.removeprefix("v"):
        if not ch.isdigit():
            break
        digits += ch
    return f"v{digits}" if version.startswith("v") and digits else version


# --- commands (duragent → gateway) ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InlineButton:
    """One button of an inline keyboard: its label and the payload a press hands back."""

    text: str
    callback_data: str


def _drop_none(value: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if v is not None}


@dataclass(frozen=True, slots=True)
class SendMessage:
    """Send ``content`` (Markdown; the gateway formats and splits it for its platform)."""

    request_id: str
    chat_id: str
    content: str
    reply_to: str | None = None
    inline_keyboard: tuple[tuple[InlineButton, ...], ...] | None = None

    def wire(self) -> dict[str, Any]:
        """The command as its JSON object."""
        body = _drop_none(
            {
                "type": "send_message",
                "request_id": self.request_id,
                "chat_id": self.chat_id,
                "content": self.content,
                "reply_to": self.reply_to,
            }
        )
        if self.inline_keyboard is not None:
            rows = [[asdict(b) for b in row] for row in self.inline_keyboard]
            body["inline_keyboard"] = {"rows": rows}
        return body


@dataclass(frozen=True, slots=True)
class SendMedia:
    """Send a file: ``media`` is ``{"source": "url", "url": …}`` or ``{"source": "base64", …}``."""

    request_id: str
    chat_id: str
    media: dict[str, Any]
    caption: str | None = None

    def wire(self) -> dict[str, Any]:
        """The command as its JSON object."""
        return _drop_none({"type": "send_media", **asdict(self)})


@dataclass(frozen=True, slots=True)
class SendTyping:
    """Show "typing…" for ``duration`` seconds (0 stops it); duragent always sends 5."""

    chat_id: str
    duration: int = 5

    def wire(self) -> dict[str, Any]:
        """The command as its JSON object."""
        return {"type": "send_typing", **asdict(self)}


@dataclass(frozen=True, slots=True)
class EditMessage:
    """Replace the text of a message the gateway sent earlier."""

    request_id: str
    chat_id: str
    message_id: str
    content: str

    def wire(self) -> dict[str, Any]:
        """The command as its JSON object."""
        return {"type": "edit_message", **asdict(self)}


@dataclass(frozen=True, slots=True)
class DeleteMessage:
    """Delete a message the gateway sent earlier."""

    request_id: str
    chat_id: str
    message_id: str

    def wire(self) -> dict[str, Any]:
        """The command as its JSON object."""
        return {"type": "delete_message", **asdict(self)}


@dataclass(frozen=True, slots=True)
class Ping:
    """Ask for a ``pong`` (uptime, whether the platform is connected)."""

    request_id: str

    def wire(self) -> dict[str, Any]:
        """The command as its JSON object."""
        return {"type": "ping", **asdict(self)}


@dataclass(frozen=True, slots=True)
class AnswerCallbackQuery:
    """Acknowledge a button press, with a toast ``text`` if given."""

    request_id: str
    callback_query_id: str
    text: str | None = None

    def wire(self) -> dict[str, Any]:
        """The command as its JSON object."""
        return _drop_none({"type": "answer_callback_query", **asdict(self)})


@dataclass(frozen=True, slots=True)
class Shutdown:
    """Stop: the gateway should disconnect and exit (it is killed 0.5 s later otherwise)."""

    def wire(self) -> dict[str, Any]:
        """The command as its JSON object."""
        return {"type": "shutdown"}


@dataclass(frozen=True, slots=True)
class AckMessage:
    """Message ``message_id`` of ``chat_id`` is durably taken: the gateway may let it go.

    Ours, not the reference's: sent only to a gateway whose ``ready`` lists the ``ack``
    capability, so a gateway written for the reference never sees it. Such a gateway can
    confirm a message to its platform (or drop its own copy) only once duragent holds it,
    and send again, after a restart, what was never acknowledged: nothing in the pipe is
    lost when duragent is killed (a message sent twice is answered once: duragent keeps
    the platform's message ids). No answer is expected.
    """

    message_id: str
    chat_id: str

    def wire(self) -> dict[str, Any]:
        """The command as its JSON object."""
        return {"type": "ack_message", "message_id": self.message_id, "chat_id": self.chat_id}


ACK_CAPABILITY = "ack"
"""The ``ready`` capability that asks for ``ack_message`` after each message is taken."""


Command = (
    SendMessage
    | SendMedia
    | SendTyping
    | EditMessage
    | DeleteMessage
    | Ping
    | AnswerCallbackQuery
    | Shutdown
    | AckMessage
)


def to_line(command: Command) -> bytes:
    """``command`` as one line of the protocol (compact JSON, UTF-8, newline-terminated)."""
    text = json.dumps(command.wire(), ensure_ascii=False, separators=(",", ":"))
    return text.encode() + b"\n"


# --- events (gateway → duragent) ------------------------------------------------------------


class _Event(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class SenderEvent(_Event):
    """Who wrote a message or pressed a button (``sender``)."""

    id: str
    username: str | None = None
    display_name: str | None = None


class Content(_Event):
    """A message's ``content``: ``text``, ``media``, ``location``, ``contact`` or ``unknown``."""

    type: str
    text: str | None = None
    media_type: str | None = None
    caption: str | None = None
    url: str | None = None
    mime_type: str | None = None
    """Ours, optional with ``media`` (the reference ignores them): the file's type, its name
    and its size in bytes, when the gateway knows them (a value of another shape is dropped,
    never the message)."""
    file_name: str | None = None
    size: int | None = None

    @field_validator("mime_type", "file_name", mode="before")
    @classmethod
    def _text_or_none(cls, value: object) -> object:
        return value if isinstance(value, str) and value.strip() else None

    @field_validator("size", mode="before")
    @classmethod
    def _size_or_none(cls, value: object) -> object:
        return value if type(value) is int and value >= 0 else None

    def as_text(self) -> str | None:
        """The text of a text message, the caption of a media message, else None."""
        if self.type == "text":
            return self.text if self.text is not None else ""
        if self.type == "media":
            return self.caption
        return None

    def kind(self) -> str:
        """What arrived, for the kit: ``text``, a media type (``image``…), ``location``, etc."""
        if self.type == "media":
            return self.media_type or "media"
        if self.type in ("text", "location", "contact"):
            return self.type
        return "other"


class Routing(_Event):
    """``routing``: the platform's view of the chat (extras such as ``thread_id`` kept)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    channel: str
    chat_type: str
    chat_id: str
    sender_id: str

    def extra(self, key: str) -> str | None:
        """An extra routing field (``thread_id``, ``guild_id``…) as text, if present."""
        value = (self.model_extra or {}).get(key)
        return None if value is None else str(value)


class Ready(_Event):
    """The gateway is connected to its platform."""

    type: Literal["ready"]
    gateway: str
    version: str
    capabilities: tuple[str, ...] = ()
    bot_username: str | None = None
    """Ours, optional: the bot's name on the platform (``/reset@<name>``); the reference
    ignores the field, so a gateway can send it to both."""


class MessageReceived(_Event):
    """A message from a chat."""

    type: Literal["message_received"]
    message_id: str
    chat_id: str
    sender: SenderEvent
    content: Content
    routing: Routing
    reply_to: str | None = None
    mentions_bot: bool = False
    reply_to_bot: bool = False
    timestamp: str | None = None
    metadata: Any = None


class CallbackQuery(_Event):
    """A press on an inline button."""

    type: Literal["callback_query"]
    callback_query_id: str
    chat_id: str
    sender: SenderEvent
    message_id: str
    data: str


class CommandOk(_Event):
    """A command succeeded (``message_id``: the platform's id of a message sent)."""

    type: Literal["command_ok"]
    request_id: str
    message_id: str | None = None


class CommandError(_Event):
    """A command failed (``code``: ``chat_not_found``, ``rate_limited``, …)."""

    type: Literal["command_error"]
    request_id: str
    code: str
    message: str


class Pong(_Event):
    """The answer to a ``ping``."""

    type: Literal["pong"]
    request_id: str
    uptime_seconds: int
    connected: bool


class ErrorEvent(_Event):
    """Something went wrong in the gateway; ``fatal``: it cannot go on."""

    type: Literal["error"]
    code: str
    message: str
    fatal: bool = False


class ShutdownEvent(_Event):
    """The gateway is stopping (``reason`` says why)."""

    type: Literal["shutdown"]
    reason: str


class AuthRequired(_Event):
    """The platform needs a person to log in (a QR code to scan, a code to type)."""

    type: Literal["auth_required"]
    method: dict[str, Any] = Field(default_factory=dict)

    def describe(self) -> str:
        """What the operator must do (for the log and ``/readyz``)."""
        kind = str(self.method.get("method", "unknown"))
        expires = self.method.get("expires_in")
        within = f" within {expires} s" if expires is not None else ""
        if kind == "pair_code":
            return f"enter the pair code {self.method.get('code')}{within}"
        if kind == "qr_code":
            art = self.method.get("qr_ascii")
            shown = f":\n{art}" if art else f" (data: {self.method.get('qr_data')})"
            return f"scan the QR code{within}{shown}"
        return f"log in ({kind})"


class AuthSuccess(_Event):
    """The login asked for by ``auth_required`` succeeded."""

    type: Literal["auth_success"]


@dataclass(frozen=True, slots=True)
class Unknown:
    """An event of a type this version does not know (ignored: forward compatibility)."""

    type: str
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


Event = (
    Ready
    | MessageReceived
    | CallbackQuery
    | CommandOk
    | CommandError
    | Pong
    | ErrorEvent
    | ShutdownEvent
    | AuthRequired
    | AuthSuccess
    | Unknown
)

_EVENTS: dict[str, type[_Event]] = {
    "ready": Ready,
    "message_received": MessageReceived,
    "callback_query": CallbackQuery,
    "command_ok": CommandOk,
    "command_error": CommandError,
    "pong": Pong,
    "error": ErrorEvent,
    "shutdown": ShutdownEvent,
    "auth_required": AuthRequired,
    "auth_success": AuthSuccess,
}


def parse_event(line: str) -> Event:
    """One line from a gateway as its event (``ProtocolError`` when it is not one)."""
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise ProtocolError(f"not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ProtocolError(f"a JSON {type(data).__name__}, not an object")
    kind = data.get("type")
    if not isinstance(kind, str):
        raise ProtocolError('no "type" field naming the event')
    model = _EVENTS.get(kind)
    if model is None:
        return Unknown(kind, data)
    try:
        event: Event = model.model_validate(data)  # type: ignore[assignment]
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or kind}: {e['msg']}" for e in exc.errors()
        )
        raise ProtocolError(f"a malformed {kind} event ({problems})") from None
    return event
