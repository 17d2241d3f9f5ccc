"""``Router``: first matching rule whose agent exists; a missing agent is warned about once."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from duragent.agents import Agent, AgentCatalog
from duragent.config.workspace import RouteConfig
from duragent.frontkit import RouteQuery, Router

DM = RouteQuery("telegram", "dm", "42", "7")
GROUP = RouteQuery("Telegram", "group", "-100", "7")


def catalog(*names: str) -> AgentCatalog:
    """A catalog holding these names (the router reads only the names, never the agents)."""
    return AgentCatalog(agents={n: Agent.__new__(Agent) for n in names})


def rules(*entries: tuple[dict[str, Any], str]) -> list[RouteConfig]:
    return [RouteConfig.model_validate({"match": m, "agent": a}) for m, a in entries]


@pytest.mark.parametrize(
    ("routes", "query", "agent"),
    [
        (rules(({}, "a")), DM, "a"),
        (rules(({"gateway": "TELEGRAM"}, "a")), GROUP, "a"),
        (rules(({"gateway": "discord"}, "a")), DM, None),
        (rules(({"chat_type": "Group"}, "a"), ({}, "b")), GROUP, "a"),
        (rules(({"chat_type": "group"}, "a"), ({}, "b")), DM, "b"),
        (rules(({"chat_id": "42"}, "a")), DM, "a"),
        (rules(({"chat_id": "4"}, "a")), DM, None),  # exact, not a prefix
        (rules(({"sender_id": "7", "chat_type": "dm"}, "a"), ({}, "b")), GROUP, "b"),
        (rules(({"sender_id": "7", "chat_type": "dm"}, "a"), ({}, "b")), DM, "a"),
        (rules(({}, "ghost"), ({}, "b")), DM, "b"),  # a missing agent is skipped
        (rules(({}, "ghost")), DM, None),
    ],
)
def test_the_first_matching_rule_with_an_existing_agent_wins(
    routes: list[RouteConfig], query: RouteQuery, agent: str | None
) -> None:
    assert Router(routes, lambda: catalog("a", "b")).route(query) == agent


def test_a_missing_agent_is_warned_about_once_not_per_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    router = Router(rules(({}, "ghost"), ({}, "a")), lambda: catalog("a"))
    with caplog.at_level(logging.WARNING):
        for _ in range(5):
            router.route(DM)
    warnings = [r for r in caplog.records if "ghost" in r.getMessage()]
    assert len(warnings) == 1
    assert "duragent.yaml" in warnings[0].getMessage()


def test_the_catalog_is_read_per_message_so_a_reload_takes_effect() -> None:
    current = [catalog("a")]
    router = Router(rules(({}, "b"), ({}, "a")), lambda: current[0])
    assert router.route(DM) == "a"
    current[0] = catalog("a", "b")
    assert router.route(DM) == "b"


@pytest.mark.parametrize(
    ("names", "agent", "note"),
    [
        (("solo",), "solo", "every chat goes to the only agent, 'solo'"),
        (("a", "b"), None, "no chat is answered; add `routes:`"),
        ((), None, "no chat is answered"),
    ],
)
def test_without_routes_only_a_single_agent_is_routed_to(
    names: tuple[str, ...], agent: str | None, note: str
) -> None:
    router = Router([], lambda: catalog(*names))
    assert router.route(DM) == agent
    assert note in router.startup_note()


def test_the_startup_note_counts_the_rules(tmp_path: Path) -> None:
    router = Router(rules(({}, "a"), ({}, "b")), lambda: catalog("a"))
    assert router.startup_note() == "routing chats by 2 rule(s) of `routes:` in duragent.yaml"
