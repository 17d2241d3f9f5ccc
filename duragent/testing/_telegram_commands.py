"""The fake Telegram's command menu: ``setMyCommands``, ``getMyCommands``, ``deleteMyCommands``.

Telegram keeps one menu per scope (everyone, private chats, groups, one chat…) and language,
and a client shows the most specific one that is set; a bot that sets its menu for the wrong
scope or language shows the user nothing new. So the fake keeps each ``(scope, language_code)``
menu apart, answers ``getMyCommands`` with exactly the one asked for (an empty list when none
is set, as Telegram does), and checks what a gateway can get wrong: a command is 1-32 of
``a-z0-9_`` (no slash, no capitals: "BOT_COMMAND_INVALID"), a description 1-256 characters,
at most 100 commands, a known scope type with the ids it needs. ``setMyCommands`` without
``commands`` sets an empty menu, as on Telegram.
"""

from __future__ import annotations

import json
import re
from typing import Any

from duragent.testing.telegram_methods import Answer, error, ok

__all__ = ["MAX_COMMANDS", "CommandMenus", "scope_key"]

MAX_COMMANDS = 100
_COMMAND = re.compile(r"[a-z0-9_]{1,32}")
_SCOPES = {
    "default": (),
    "all_private_chats": (),
    "all_group_chats": (),
    "all_chat_administrators": (),
    "chat": ("chat_id",),
    "chat_administrators": ("chat_id",),
    "chat_member": ("chat_id", "user_id"),
}
_DEFAULT_SCOPE = {"type": "default"}
_NO_DESCRIPTION = 'Can\'t find field "description"'


def scope_key(scope: dict[str, Any] | None, language_code: str = "") -> str:
    """The key a menu is kept under: the scope as compact JSON, a space, the language."""
    given = scope or _DEFAULT_SCOPE
    return json.dumps(given, sort_keys=True, separators=(",", ":")) + f" {language_code}"


class CommandMenus:
    """The menus by scope and language (not thread-safe: the fake locks)."""

    def __init__(self) -> None:
        self.menus: dict[str, list[dict[str, str]]] = {}
        """``scope_key`` → the commands set there (a deleted menu is gone)."""

    def table(self) -> dict[str, Any]:
        """The three methods, for ``BotMethods.table``."""
        return {
            "setMyCommands": self.set_commands,
            "getMyCommands": self.get_commands,
            "deleteMyCommands": self.delete_commands,
        }

    def menu(self, scope: dict[str, Any] | None = None, language_code: str = "") -> list[Any]:
        """The commands of one scope and language (``[]`` when none are set)."""
        return [dict(c) for c in self.menus.get(scope_key(scope, language_code), [])]

    def _where(self, params: dict[str, Any]) -> str | Answer:
        scope = params.get("scope")
        if scope is not None:
            if not isinstance(scope, dict) or scope.get("type") not in _SCOPES:
                return error(400, "Bad Request: can't parse BotCommandScope JSON object")
            missing = [k for k in _SCOPES[scope["type"]] if scope.get(k) in (None, "")]
            if missing:
                detail = f'field "{missing[0]}" is missing'
                return error(400, f"Bad Request: can't parse BotCommandScope: {detail}")
        language = params.get("language_code") or ""
        if not isinstance(language, str) or (language and not re.fullmatch("[a-z]{2}", language)):
            return error(400, "Bad Request: LANG_CODE_INVALID")
        return scope_key(scope, language)

    def set_commands(self, params: dict[str, Any]) -> Answer:
        """Replace the menu of the call's scope and language."""
        where = self._where(params)
        if isinstance(where, tuple):
            return where
        commands = params.get("commands", [])
        if not isinstance(commands, list):
            return error(400, "Bad Request: can't parse commands JSON object")
        if len(commands) > MAX_COMMANDS:
            return error(400, "Bad Request: too many commands specified")
        kept: list[dict[str, str]] = []
        for command in commands:
            if not isinstance(command, dict) or "description" not in command:
                return error(400, f"Bad Request: can't parse BotCommand: {_NO_DESCRIPTION}")
            name, description = command.get("command"), command["description"]
            if not isinstance(name, str) or not _COMMAND.fullmatch(name):
                return error(400, "Bad Request: BOT_COMMAND_INVALID")
            if not isinstance(description, str) or not description.strip():
                return error(400, "Bad Request: command description must be non-empty")
            if len(description) > 256:
                return error(400, "Bad Request: command description is too long")
            kept.append({"command": name, "description": description})
        self.menus[where] = kept
        return ok(True)

    def get_commands(self, params: dict[str, Any]) -> Answer:
        """The menu of exactly the call's scope and language."""
        where = self._where(params)
        if isinstance(where, tuple):
            return where
        return ok([dict(c) for c in self.menus.get(where, [])])

    def delete_commands(self, params: dict[str, Any]) -> Answer:
        """Forget the menu of the call's scope and language."""
        where = self._where(params)
        if isinstance(where, tuple):
            return where
        self.menus.pop(where, None)
        return ok(True)
