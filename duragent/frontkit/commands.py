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

``/start`` and ``/help`` (ours; spec ``202612051900.start-help-menu``) are answered here, not
by the model: ``spec.chat.start_message`` / ``help_message``, or a greeting naming the agent
and the commands the reader may use (``commands_for``: an owner also sees ``/pair`` where it
works). ``/start`` may carry an argument (Telegram's deep links: ``/start <payload>``). The
same list, with the agent's own ``spec.chat.commands``, is what a platform's command menu
offers. Nothing of either is recorded: they start no session.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from duragent.agents import Agent
from duragent.agents.roles import access_of
from duragent.store import LeaseHeldError
from duragent.turns import PinRefusedError, TurnRunner

__all__ = [
    "NO_SESSION",
    "NO_SESSION_TO_RESET",
    "RESET_DONE",
    "STATUS_FAILED",
    "ChatCommand",
    "Command",
    "Intro",
    "addressed_to",
    "agent_command",
    "commands_for",
    "greeting",
    "help_text",
    "parse_command",
    "parse_intro",
    "parse_pin",
    "pin_reply",
    "run_command",
    "start_text",
    "stranger_start",
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
    except LeaseHeldError:  # it lives on another node: the relay hands the command there
        raise
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


# --- /start, /help and the command menu -----------------------------------------------------

Intro = Literal["start", "help"]


@dataclass(frozen=True, slots=True)
class ChatCommand:
    """A command as a person is offered it: in ``/help`` and in a platform's command menu."""

    name: str
    """Without the slash; ``^[a-z0-9_]{1,32}$`` (Telegram's rule, the strictest)."""
    description: str
    """One line of at most 256 characters (Telegram's limit)."""
    arguments: str = ""
    """What follows the name, as ``/help`` shows it (``<text>``)."""


START = ChatCommand("start", "Who I am and how to talk to me")
HELP = ChatCommand("help", "What I can do and the commands you may use")
_MEMBERS = (
    ChatCommand("reset", "End this conversation: the next message starts a new one"),
    ChatCommand("status", "This conversation's session: its id, status and start"),
    ChatCommand("pin", "Keep something in mind for the rest of this conversation", "<text>"),
    ChatCommand("unpin", "Forget a pin", "<pin id>"),
)
PAIR = ChatCommand("pair", "Approve a pairing code (alone: the codes waiting)", "[code]")


def commands_for(agent: Agent, *, owner: bool, group: bool) -> tuple[ChatCommand, ...]:
    """The commands a person let in may use in a chat of ``agent``, in menu order.

    ``/start`` in direct messages (in a group it is Telegram's deep-link form, answered but
    not offered); ``/pair`` to an owner in a direct message under ``dm.policy: pairing``, the
    only place it does anything; then the agent's own ``spec.chat.commands``.
    """
    runtime = [*((START,) if not group else ()), HELP, *_MEMBERS]
    if owner and not group and access_of(agent.spec.access).dm.policy == "pairing":
        runtime.append(PAIR)
    own = [ChatCommand(c.command, c.description) for c in agent.spec.chat.commands]
    return (*runtime, *own)


def _head(text: str | None, bot_username: str | None) -> tuple[str, str] | None:
    """``(name, rest)`` of a text that starts with a command for this bot (bare or ``@`` it)."""
    if not text or not text.strip().startswith("/"):
        return None
    head, _, rest = text.strip().partition(" ")
    if "\n" in head:
        head, _, more = head.partition("\n")
        rest = f"{more} {rest}"
    name, at, target = head[1:].partition("@")
    if at and (not bot_username or target.lower() != bot_username.lstrip("@").lower()):
        return None
    return name, rest.strip()


def parse_intro(text: str | None, bot_username: str | None) -> Intro | None:
    """``start`` or ``help`` when ``text`` is that command for this bot (arguments ignored)."""
    found = _head(text, bot_username)
    if found is None or found[0] not in ("start", "help"):
        return None
    return "start" if found[0] == "start" else "help"


def agent_command(text: str | None, bot_username: str | None, agent: Agent) -> bool:
    """Whether ``text`` starts with one of the agent's own commands (for this bot).

    Such a message goes to the model; in a group it addresses the bot, since the menu
    offered it there (a bare one too: Telegram omits ``@bot`` when the bot is alone).
    """
    found = _head(text, bot_username)
    return found is not None and any(c.command == found[0] for c in agent.spec.chat.commands)


def greeting(agent: Agent) -> str:
    """The first line of the default ``/start``: the agent's name and description."""
    about = agent.manifest.metadata.description
    return f"Hi! I am {agent.name}." + (f" {about.strip()}" if about and about.strip() else "")


def _how_to_talk(agent: Agent, *, group: bool, bot_username: str | None) -> str:
    if not group:
        return "Write to me here and I will answer."
    if access_of(agent.spec.access).groups.activation == "always":
        return "I read this group and answer what is said here."
    me = f" (@{bot_username.lstrip('@')})" if bot_username else ""
    return f"Mention me{me} or reply to one of my messages and I will answer."


def _listed(commands: Sequence[ChatCommand]) -> str:
    """The commands as ``/help`` lists them, one a line (``/start`` and ``/help`` left out)."""
    lines = [
        f"/{c.name}{' ' + c.arguments if c.arguments else ''} — {c.description}"
        for c in commands
        if c not in (START, HELP)
    ]
    return "\n".join(lines)


def start_text(
    agent: Agent, commands: Sequence[ChatCommand], *, group: bool, bot_username: str | None
) -> str:
    """The answer to ``/start``: ``spec.chat.start_message``, or a greeting and how to talk."""
    written = agent.spec.chat.start_message
    if written is not None and written.strip():
        return written.replace("{commands}", _listed(commands)).strip()
    talk = _how_to_talk(agent, group=group, bot_username=bot_username)
    return f"{greeting(agent)}\n{talk} /help lists what else I can do."


def help_text(
    agent: Agent, commands: Sequence[ChatCommand], *, group: bool, bot_username: str | None
) -> str:
    """The answer to ``/help``: ``spec.chat.help_message``, or how to talk and the commands."""
    written = agent.spec.chat.help_message
    if written is not None and written.strip():
        return written.replace("{commands}", _listed(commands)).strip()
    talk = _how_to_talk(agent, group=group, bot_username=bot_username)
    return f"{talk}\n\nCommands:\n{_listed(commands)}"


def stranger_start(agent: Agent, told: str) -> str:
    """``/start`` or ``/help`` from a stranger under pairing: the greeting, then ``told``.

    ``told`` says how to pair (``pairing_chat.code_text``); the stranger may run nothing, so
    no command is listed (``{commands}`` in ``start_message`` is left empty).
    """
    written = agent.spec.chat.start_message
    first = written.replace("{commands}", "").strip() if written and written.strip() else ""
    return f"{first or greeting(agent)}\n\n{told}"
