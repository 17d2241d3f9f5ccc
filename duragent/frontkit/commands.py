"""Chat slash commands: ``/reset`` and ``/status``, with the reference's reply texts.

Recognised when the whole trimmed text is ``/reset`` or ``/status``, optionally addressed to
this bot (``/reset@my_bot``, the form Telegram uses in groups; the bot's name compared
case-insensitively). A command addressed to another bot, any other command, or a command with
arguments is an ordinary message and goes to the model, as in the reference.

The reference checks commands before routing and access, so any member of a group could reset
the group's session (⚠). Here the gateway runs them after the access gate, and only for a
sender whose group disposition is ``allow`` (see ``ChatFront``).

``/reset`` completes the chat's session (status ``completed``, dropped from the chat index,
files kept): the chat's next message starts a new session.

``/pin <text>`` (ours, the summaries tier) pins ``text`` in the chat's session: it is sent
with every later request and never summarised; ``/unpin <id>`` removes it. Unlike the two
above, these take an argument; the same addressing and access rules apply.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from duragent.turns import PinRefusedError, TurnRunner

__all__ = [
    "NO_SESSION",
    "NO_SESSION_TO_RESET",
    "RESET_DONE",
    "STATUS_FAILED",
    "Command",
    "addressed_to",
    "parse_command",
    "parse_pin",
    "pin_reply",
    "run_command",
]

PIN_USAGE = "Usage: /pin <text to keep in mind for the rest of this conversation>"
MAX_PIN_CHARS = 2_000

Command = Literal["reset", "status"]

RESET_DONE = "Session reset. Send a message to start a new conversation."
NO_SESSION_TO_RESET = "No active session to reset."
NO_SESSION = "No active session."
STATUS_FAILED = "Failed to get session status."

_COMMANDS: tuple[Command, ...] = ("reset", "status")


def parse_command(text: str | None, bot_username: str | None) -> Command | None:
    """The command ``text`` is, or None when it is a message for the model."""
    if not text:
        return None
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    name, at, target = stripped[1:].partition("@")
    if at and (not bot_username or target.lower() != bot_username.lstrip("@").lower()):
        return None
    for command in _COMMANDS:
        if name == command:
            return command
    return None


def addressed_to(text: str | None, bot_username: str | None) -> bool:
    """Whether ``text`` is a command addressed to this bot by name (``/help@my_bot …``).

    Telegram writes a group command that way when a person picks it from the bot's menu; it
    addresses the bot as plainly as a mention, so under ``activation: mention`` it triggers
    a turn (a command the kit does not run goes to the model).
    """
    if not text or not bot_username:
        return False
    head = text.strip().split(maxsplit=1)[0] if text.strip() else ""
    name, at, target = head[1:].partition("@") if head.startswith("/") else ("", "", "")
    return bool(name and at and target.lower() == bot_username.lstrip("@").lower())


def parse_pin(text: str | None, bot_username: str | None) -> tuple[str, str] | None:
    """``("pin", text)`` / ``("unpin", id)`` when ``text`` is ``/pin …`` or ``/unpin …``."""
    if not text:
        return None
    stripped = text.strip()
    head, _, rest = stripped.partition(" ")
    if "\n" in head:
        head, _, more = head.partition("\n")
        rest = f"{more} {rest}".strip()
    name, at, target = head[1:].partition("@") if head.startswith("/") else ("", "", "")
    if at and (not bot_username or target.lower() != bot_username.lstrip("@").lower()):
        return None
    if name in ("pin", "unpin"):
        return name, rest.strip()
    return None


async def pin_reply(turns: TurnRunner, session_id: str, command: str, argument: str) -> str:
    """Run ``/pin`` or ``/unpin`` on the chat's session; the reply text.

    A pin the agent has no room for (``TurnRunner.pin``) is refused with the limit and what
    to do, in the chat's words: recorded, it would make every later turn fail.
    """
    if command == "unpin":
        if not argument:
            return "Usage: /unpin <pin id>"
        removed = await turns.unpin(session_id, argument)
        return "Unpinned." if removed else f"No pin {argument} in this conversation."
    if not argument:
        return PIN_USAGE
    if len(argument) > MAX_PIN_CHARS:
        return f"That is {len(argument)} characters; a pin may have {MAX_PIN_CHARS}."
    try:
        pin_id = await turns.pin(session_id, argument, kind="note", source="user")
    except PinRefusedError as exc:
        others = f" and the other pins ~{exc.others}" if exc.others else ""
        unpin = " or /unpin one of the others" if exc.others else ""
        return (
            f"Not pinned: it needs ~{exc.new} tokens{others}, but pins may take at most "
            f"{exc.room} tokens with this agent. Shorten it{unpin}."
        )
    return f"Pinned ({pin_id}): I will keep it in mind for the rest of this conversation."


async def run_command(command: Command, turns: TurnRunner, key: tuple[str, str, str]) -> str:
    """Run ``command`` for the chat ``key`` = (gateway, chat_id, agent); the reply text."""
    if command == "reset":
        ended = await turns.end_chat(key)
        return RESET_DONE if ended is not None else NO_SESSION_TO_RESET
    session_id = await turns.sessions.chat_session(key)
    if session_id is None:
        return NO_SESSION
    try:
        info = await turns.sessions.info(session_id)
    except Exception:  # the reference's sentence for any failure to read it
        return STATUS_FAILED
    return (
        f"Session: {info.session_id}\nAgent: {info.agent}\n"
        f"Status: {info.status.value.capitalize()}\nCreated: {_minute(info.created_at)}"
    )


def _minute(stamp: str) -> str:
    """An RFC 3339 time as ``YYYY-MM-DD HH:MM UTC`` (as written, if it cannot be read)."""
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp
    return moment.strftime("%Y-%m-%d %H:%M UTC")
