"""The bot's command menu on Telegram: ``setMyCommands`` per scope, kept in step with the agents.

Telegram keeps a menu per scope and shows a chat the most specific one set. The menus come
from ``frontkit.commands.commands_for`` (the runtime's commands a person may use, then the
agent's own ``spec.chat.commands``), for the agent ``routes`` give that kind of chat when no
chat- or sender-specific rule names it (``ChatFront.agent_for``):

- ``default``: the private chats' menu (what a client shows where no narrower one is set);
- ``all_private_chats``: ``/start``, ``/help``, ``/reset``, ``/status``, ``/pin``,
  ``/unpin``, then the agent's own;
- ``all_group_chats``: the same without ``/start`` (answered in a group, not offered);
- ``chat`` with an owner's id: the private menu and ``/pair``, for each owner of the DM
  agent under ``dm.policy: pairing`` (a private chat's id is its user's).

Not ``all_chat_administrators``: a group's administrators are not the agent's owners, and
the owners' one command (``/pair``) works only in a direct message.

``MenuKeeper.run`` sets the menus once the gateway serves, then looks every
``CHECK_SECONDS`` whether the agent catalog was swapped (``reload-agents``) and sets the
scopes whose menu changed (an owner's scope no longer wanted is deleted); an unchanged menu
is not sent again. A failure (Telegram refusing, the network) is logged and tried again after
a growing pause (``RETRY_SECONDS``): it never stops the gateway, which serves messages all the
while. With several nodes each sets the same menus (``setMyCommands`` is idempotent).
Known limit: an owner's menu set by an earlier run and not wanted after a restart stays until
Telegram is told otherwise (the runtime does not remember which it set).
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Sequence

from telegram import (
    Bot,
    BotCommand,
    BotCommandScope,
    BotCommandScopeAllGroupChats,
    BotCommandScopeAllPrivateChats,
    BotCommandScopeChat,
    BotCommandScopeDefault,
)

from duragent.agents.roles import access_of
from duragent.frontkit import ChatFront
from duragent.frontkit.commands import ChatCommand, commands_for

__all__ = ["CHECK_SECONDS", "RETRY_SECONDS", "Menu", "MenuKeeper", "Scope", "wanted_menus"]

log = logging.getLogger(__name__)

CHECK_SECONDS = 1.0
"""How often the keeper looks whether the agents were reloaded (a comparison, no request)."""
RETRY_SECONDS = (30.0, 120.0, 600.0, 3600.0)
"""Pauses before a menu Telegram refused is sent again (the last one repeats)."""
MAX_COMMANDS = 100
"""Telegram's limit per menu."""

Scope = tuple[str, int | None]
"""A menu's scope: ``("default", None)``… or ``("chat", <owner's user id>)``."""
Menu = tuple[tuple[str, str], ...]
"""``(command, description)`` pairs, in order."""

_NAME = re.compile(r"[a-z0-9_]{1,32}")
_GATEWAY = "telegram"


def _menu(commands: Sequence[ChatCommand]) -> Menu:
    """The pairs Telegram accepts (a name it would refuse is left out; at most 100)."""
    pairs = [(c.name, c.description[:256]) for c in commands if _NAME.fullmatch(c.name)]
    return tuple(pairs[:MAX_COMMANDS])


def wanted_menus(front: ChatFront) -> dict[Scope, Menu]:
    """Every scope's menu as the agents are now (see the module docstring)."""
    dm = front.agent_for(_GATEWAY, "dm")
    group = front.agent_for(_GATEWAY, "group")
    private = _menu(commands_for(dm, owner=False, group=False)) if dm else ()
    menus: dict[Scope, Menu] = {
        ("default", None): private,
        ("all_private_chats", None): private,
        ("all_group_chats", None): _menu(commands_for(group, owner=False, group=True))
        if group
        else (),
    }
    for agent in front.catalog.agents.values():
        for owner in sorted(access_of(agent.spec.access).owner_ids(_GATEWAY)):
            if not owner.lstrip("-").isdigit():
                continue  # not a Telegram user id: no chat to scope a menu to
            theirs = front.agent_for(_GATEWAY, "dm", owner, owner)
            if theirs is None or owner not in access_of(theirs.spec.access).owner_ids(_GATEWAY):
                continue
            menu = _menu(commands_for(theirs, owner=True, group=False))
            if menu != private:
                menus[("chat", int(owner))] = menu
    return menus


def _scope(scope: Scope) -> BotCommandScope:
    kind, chat_id = scope
    if kind == "chat" and chat_id is not None:
        return BotCommandScopeChat(chat_id)
    if kind == "all_private_chats":
        return BotCommandScopeAllPrivateChats()
    if kind == "all_group_chats":
        return BotCommandScopeAllGroupChats()
    return BotCommandScopeDefault()


def _named(scope: Scope) -> str:
    return f"chat {scope[1]}" if scope[0] == "chat" else scope[0]


class MenuKeeper:
    """Sets the bot's menus and keeps them in step with the agents (module docstring)."""

    def __init__(self, bot: Bot, front: ChatFront) -> None:
        self._bot = bot
        self._front = front
        self.held: dict[Scope, Menu] = {}
        """What Telegram holds, as far as this run set it."""
        self._failed: dict[Scope, tuple[int, float]] = {}
        """A scope Telegram refused: failures in a row, and when to try again (monotonic)."""

    async def run(self) -> None:
        """Set the menus now and after every reload, until cancelled (never raises else)."""
        seen = None
        wanted: dict[Scope, Menu] = {}
        while True:
            try:
                catalog = self._front.catalog
                if catalog is not seen:
                    seen, wanted = catalog, wanted_menus(self._front)
                    self._failed.clear()  # a new menu is tried at once
                await self.apply(wanted)
            except Exception:  # a bug here must not end the menus' upkeep silently
                log.exception("telegram: keeping the command menu failed; trying again")
            await asyncio.sleep(CHECK_SECONDS)

    async def apply(self, wanted: dict[Scope, Menu]) -> None:
        """Set each scope whose menu differs from what Telegram holds; delete those gone."""
        changes: list[tuple[Scope, Menu | None]] = [
            (s, m) for s, m in wanted.items() if self.held.get(s) != m
        ]
        changes += [(s, None) for s in self.held if s not in wanted]
        now = time.monotonic()
        done: list[str] = []
        for scope, menu in changes:
            failed = self._failed.get(scope)
            if failed is not None and now < failed[1]:
                continue
            try:
                if menu:
                    commands = [BotCommand(name, about) for name, about in menu]
                    await self._bot.set_my_commands(commands, scope=_scope(scope))
                else:
                    await self._bot.delete_my_commands(scope=_scope(scope))
            except Exception as exc:  # TelegramError, a network error: logged, tried later
                count = failed[0] + 1 if failed is not None else 1
                pause = RETRY_SECONDS[min(count, len(RETRY_SECONDS)) - 1]
                self._failed[scope] = (count, time.monotonic() + pause)
                log.warning(
                    "telegram: could not set the command menu for %s (%s); trying again in "
                    "%.0f s (the bot serves messages meanwhile)",
                    *(_named(scope), exc, pause),
                )
                continue
            self._failed.pop(scope, None)
            if menu is None:
                self.held.pop(scope, None)
            else:
                self.held[scope] = menu
            done.append(_named(scope))
        if done:
            log.info("telegram: command menu set for %s", ", ".join(done))
