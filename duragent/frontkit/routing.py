"""Which agent answers a chat message: ``routes[]`` of ``duragent.yaml``, first match wins.

A rule matches when every condition it states holds: ``gateway`` and ``chat_type`` compared
case-insensitively, ``chat_id`` and ``sender_id`` exactly; a rule without conditions matches
everything. The first matching rule whose agent exists in the *current* catalog (agents are
reloadable, so it is asked per message) picks the agent. A rule naming an agent that does not
exist is skipped with a warning, once per agent name (not per message: a busy group would
flood the log). Nothing matches → ``None``: the caller drops the message (fail closed).

No ``routes`` at all: a workspace with exactly one agent routes every chat to it (a user with
one agent and a bot token expects the bot to answer), which is the same as one rule with no
conditions. With several agents and no routes, nothing is routed: picking one by name order
would hand chats to an agent nobody chose. ``Router.startup_note`` says which case applies,
for the gateway to log when it starts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from duragent.agents import AgentCatalog
from duragent.config.workspace import RouteConfig, RouteMatch

__all__ = ["RouteQuery", "Router"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RouteQuery:
    """What a rule can look at: the message's gateway, chat type, chat and sender."""

    gateway: str
    chat_type: str
    chat_id: str
    sender_id: str


def _matches(match: RouteMatch, query: RouteQuery) -> bool:
    if match.gateway is not None and match.gateway.lower() != query.gateway.lower():
        return False
    if match.chat_type is not None and match.chat_type.lower() != query.chat_type.lower():
        return False
    if match.chat_id is not None and match.chat_id != query.chat_id:
        return False
    return match.sender_id is None or match.sender_id == query.sender_id


class Router:
    """Picks the agent for a message from ``routes`` (see module docstring)."""

    def __init__(self, routes: Sequence[RouteConfig], agents: Callable[[], AgentCatalog]) -> None:
        self._routes = tuple(routes)
        self._agents = agents
        self._warned: set[str] = set()

    def route(self, query: RouteQuery) -> str | None:
        """The agent that answers ``query``, or None (the message is to be dropped)."""
        catalog = self._agents()
        if not self._routes:
            names = catalog.names()
            return names[0] if len(names) == 1 else None
        for rule in self._routes:
            if not _matches(rule.match, query):
                continue
            if rule.agent in catalog.agents:
                return rule.agent
            if rule.agent not in self._warned:
                self._warned.add(rule.agent)
                log.warning(
                    "routes: agent %r does not exist (agents: %s); rules naming it are "
                    "skipped — fix the rule's `agent:` in duragent.yaml or add the agent",
                    rule.agent,
                    ", ".join(catalog.names()) or "none",
                )
        return None

    def startup_note(self) -> str:
        """One line saying how chats are routed, for the gateway to log when it starts."""
        if self._routes:
            return f"routing chats by {len(self._routes)} rule(s) of `routes:` in duragent.yaml"
        names = self._agents().names()
        if len(names) == 1:
            return f"no `routes:` in duragent.yaml: every chat goes to the only agent, {names[0]!r}"
        return (
            f"no `routes:` in duragent.yaml and {len(names)} agents: no chat is answered; "
            "add `routes:` (e.g. `- match: {gateway: telegram}` with `agent: <name>`)"
        )
