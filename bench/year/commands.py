"""``/status`` and ``/reset`` in the simulated year's DMs, and what their replies must show.

A command's reply carries no answer token (``Session: session_…``, ``Session reset. …``), so
the campaign's verdict, which reads tokens, cannot place it. Commands go to DMs only, where
the chat is closed-loop: a command is written once everything before it was answered and
the chat writes nothing more until the command is answered, so **the reply is the first send
to that chat, not an approval prompt, after the command was written** — placed by the fake
Telegram's record (its order), not by its text. The text is then checked:

- ``/status`` names a session of the chat's agent (``Session: session_… Agent: small``);
- ``/reset`` says the session was reset (``RESET_DONE``);
- a ``/status`` after a ``/reset`` names **another** session than the one before it, and the
  probe asked between them (``PROBE``, the chat's secret given in its first message) must
  **not** be answered from before the reset (``YearModel.probes`` is False for it), while
  every probe without a reset still is.

Each DM asks ``/status`` before its message ``STATUS_AT``; one probed DM in two (index ≡ 0
mod ``RESET_EVERY``) writes ``/reset`` just before its probe and ``/status`` just after it.
A command is run at least once: a kill after its reply went out and before Telegram's
update was confirmed runs it again after the restart (the same status text, or "No active
session to reset."): such copies from a later process than a killed one are counted apart
(``rerun_after_kill``), any other extra reply is a problem.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from duragent.frontkit.commands import NO_SESSION_TO_RESET, RESET_DONE
from duragent.testing.campaign_verdict import Chat, SentText
from duragent.testing.serve_process import ServeProcess

__all__ = [
    "RESET_EVERY",
    "STATUS_AT",
    "ChatCommand",
    "CommandCheck",
    "check_commands",
    "due",
    "plan_commands",
    "reset_probes",
    "take_reply",
]

STATUS_AT = 2
RESET_EVERY = 8
_STATUS = re.compile(r"^Session: (session_[0-9A-Z]{26})\nAgent: (\w+)\nStatus: \w+\n")

Kind = Literal["status", "reset"]


@dataclass
class ChatCommand:
    """One command a DM writes before its message ``before`` (``len(messages)``: at the end)."""

    chat_id: int
    before: int
    kind: Kind
    after_reset: bool = False
    pushed_at: float | None = None
    reply: SentText | None = None
    copies: list[SentText] = field(default_factory=list)
    """Later sends of the same text (or "No active session to reset.") to this chat."""

    @property
    def text(self) -> str:
        return f"/{self.kind}"


def plan_commands(dms: list[Chat], probed: dict[str, int]) -> dict[int, list[ChatCommand]]:
    """Each DM's commands in order (module docstring); ``probed``: probe token → chat index."""
    probe_of = {index: token for token, index in probed.items()}
    out: dict[int, list[ChatCommand]] = {}
    for chat in dms:
        commands = []
        if len(chat.messages) > STATUS_AT:
            commands.append(ChatCommand(chat.chat_id, STATUS_AT, "status"))
        token = probe_of.get(chat.index)
        if token is not None and chat.index % RESET_EVERY == 0:
            at = next(m.ordinal for m in chat.messages if m.token == token)
            commands.append(ChatCommand(chat.chat_id, at, "reset"))
            commands.append(ChatCommand(chat.chat_id, at + 1, "status", after_reset=True))
        out[chat.chat_id] = commands
    return out


def reset_probes(commands: dict[int, list[ChatCommand]], chats: list[Chat]) -> set[str]:
    """Tokens of the messages written right after a ``/reset`` (the probes)."""
    by_id = {c.chat_id: c for c in chats}
    return {
        by_id[c.chat_id].messages[c.before].token
        for cs in commands.values()
        for c in cs
        if c.kind == "reset" and c.before < len(by_id[c.chat_id].messages)
    }


def due(commands: list[ChatCommand], next_ordinal: int) -> ChatCommand | None:
    """The command the chat must write or wait for before its message ``next_ordinal``."""
    for command in commands:
        if command.reply is None:
            return command if command.before == next_ordinal else None
    return None


def take_reply(commands: list[ChatCommand], sent: SentText) -> bool:
    """Place ``sent`` (not a prompt, no answer token): the reply of the command waiting for
    one, or a copy of the last answered command's (False: neither)."""
    answered = None
    for command in commands:
        if command.pushed_at is not None and command.reply is None:
            command.reply = sent
            return True
        if command.reply is not None:
            answered = command
    if answered is None or answered.reply is None:
        return False
    if sent.text not in (answered.reply.text, NO_SESSION_TO_RESET):
        return False
    answered.copies.append(sent)
    return True


@dataclass
class CommandCheck:
    """The commands' verdict (module docstring)."""

    status_asked: int = 0
    status_right: int = 0
    reset_asked: int = 0
    reset_right: int = 0
    fresh_sessions: int = 0
    """``/status`` after a ``/reset`` naming another session than before it."""
    rerun_after_kill: int = 0
    problems: list[str] = field(default_factory=list)


def check_commands(commands: dict[int, list[ChatCommand]], serve: ServeProcess) -> CommandCheck:
    """Judge every command's reply and its extra copies."""
    out = CommandCheck()
    for chat_id, chat_commands in commands.items():
        before_reset: str | None = None
        for command in chat_commands:
            if command.pushed_at is None:
                out.problems.append(f"chat {chat_id}: {command.text} never written")
                continue
            if command.kind == "status":
                out.status_asked += 1
            else:
                out.reset_asked += 1
            reply = command.reply
            if reply is None:
                out.problems.append(f"chat {chat_id}: {command.text} never answered")
                continue
            session = _status_session(reply.text)
            if command.kind == "reset":
                if reply.text == RESET_DONE:
                    out.reset_right += 1
                else:
                    out.problems.append(f"chat {chat_id}: /reset answered {reply.text[:80]!r}")
            elif session is None:
                out.problems.append(f"chat {chat_id}: /status answered {reply.text[:80]!r}")
            else:
                out.status_right += 1
                if not command.after_reset:
                    before_reset = session
                elif session != before_reset:
                    out.fresh_sessions += 1
                else:
                    out.problems.append(f"chat {chat_id}: /status after /reset names {session}")
            for copy in command.copies:
                again = copy.text in (reply.text, NO_SESSION_TO_RESET)
                if again and serve.resent_after_kill(reply.lifetime, copy.lifetime, copy.at):
                    out.rerun_after_kill += 1
                else:
                    out.problems.append(f"chat {chat_id}: {command.text} answered again")
    return out


def _status_session(text: str) -> str | None:
    """The session a ``/status`` reply names, when it names one of the DM agent's."""
    found = _STATUS.match(text)
    return found.group(1) if found is not None and found.group(2) == "small" else None
