"""``spec.access`` as pure decisions: the chat gate, sender dispositions, mention gating."""

from __future__ import annotations

from typing import Any

import pytest

from duragent.agents.spec import AccessSpec, GroupAccess
from duragent.frontkit.access import admit, chat_allowed, matches_pattern, sender_disposition


def access(**data: Any) -> AccessSpec:
    return AccessSpec.model_validate(data)


@pytest.mark.parametrize(
    ("pattern", "value", "matches"),
    [
        ("42", "42", True),
        ("42", "421", False),
        ("4*", "421", True),
        ("*", "anything", True),
        ("telegram:*", "telegram:-100", True),
        ("telegram:*", "discord:-100", False),
        ("a*b", "axb", False),  # only a trailing star is a wildcard
    ],
)
def test_patterns_are_exact_or_a_trailing_star_prefix(
    pattern: str, value: str, matches: bool
) -> None:
    assert matches_pattern(pattern, value) is matches


@pytest.mark.parametrize(
    ("spec", "chat_type", "chat_id", "sender", "allowed"),
    [
        (None, "dm", "1", "7", True),
        (access(), "group", "-1", "7", True),
        (access(dm={"policy": "disabled"}), "dm", "1", "7", False),
        (access(dm={"policy": "disabled"}), "private", "1", "7", False),
        (access(dm={"policy": "disabled"}), "group", "-1", "7", True),
        (access(dm={"policy": "allowlist", "allowlist": ["7"]}), "dm", "1", "7", True),
        (access(dm={"policy": "allowlist", "allowlist": ["8"]}), "DM", "1", "7", False),
        (access(dm={"policy": "allowlist"}), "dm", "1", "7", False),  # empty list: nobody
        (access(groups={"policy": "disabled"}), "channel", "-1", "7", False),
        (access(groups={"policy": "allowlist", "allowlist": ["t:-1"]}), "group", "-1", "7", True),
        (access(groups={"policy": "allowlist", "allowlist": ["t:-1"]}), "group", "-2", "7", False),
        (
            access(groups={"policy": "allowlist", "allowlist": ["t:*"]}),
            "supergroup",
            "-2",
            "7",
            True,
        ),
        (access(dm={"policy": "disabled"}, groups={"policy": "disabled"}), "forum", "1", "7", True),
    ],
)
def test_the_chat_gate(
    spec: AccessSpec | None, chat_type: str, chat_id: str, sender: str, allowed: bool
) -> None:
    got = chat_allowed(spec, gateway="t", chat_type=chat_type, chat_id=chat_id, sender_id=sender)
    assert got is allowed


@pytest.mark.parametrize(
    ("overrides", "default", "sender", "disposition"),
    [
        ({}, "allow", "7", "allow"),
        ({}, "passive", "7", "passive"),
        ({"7": "silent"}, "allow", "7", "silent"),
        ({"7": "allow", "*": "block"}, "allow", "7", "allow"),  # exact beats wildcard
        ({"1*": "block", "12*": "passive"}, "allow", "123", "passive"),  # longest wildcard
        ({"12*": "passive", "1*": "block"}, "allow", "19", "block"),
        ({"9*": "block"}, "silent", "123", "silent"),
    ],
)
def test_sender_disposition(
    overrides: dict[str, str], default: str, sender: str, disposition: str
) -> None:
    groups = GroupAccess.model_validate({"sender_overrides": overrides, "sender_default": default})
    assert sender_disposition(groups, sender) == disposition


@pytest.mark.parametrize(
    ("groups", "chat_type", "triggered", "action", "buffered"),
    [
        ({}, "group", True, "answer", True),
        ({}, "group", False, "buffer", False),
        ({"context_buffer": {"mode": "passive"}}, "group", False, "record", False),
        ({"context_buffer": {"mode": "passive"}}, "group", True, "answer", False),
        ({"activation": "always"}, "group", False, "answer", False),
        ({"sender_default": "silent"}, "group", True, "buffer", False),
        ({"sender_default": "passive"}, "group", True, "record", False),
        ({"sender_default": "block"}, "group", True, "drop", False),
        ({"sender_default": "block"}, "dm", False, "answer", False),
        ({"policy": "disabled"}, "group", True, "drop", False),
    ],
)
def test_admission(
    groups: dict[str, Any], chat_type: str, triggered: bool, action: str, buffered: bool
) -> None:
    got = admit(
        access(groups=groups),
        gateway="t",
        chat_type=chat_type,
        chat_id="-1",
        sender_id="7",
        triggered=triggered,
    )
    assert got.action == action
    assert (got.buffer is not None) is buffered


def test_no_access_block_answers_a_group_only_when_the_bot_is_addressed() -> None:
    quiet = admit(
        None, gateway="t", chat_type="group", chat_id="-1", sender_id="7", triggered=False
    )
    asked = admit(None, gateway="t", chat_type="group", chat_id="-1", sender_id="7", triggered=True)
    assert quiet.action == "buffer"  # chatter is context for the next mention, never a turn
    assert asked.action == "answer"


def test_no_access_block_answers_every_direct_message() -> None:
    got = admit(None, gateway="t", chat_type="private", chat_id="7", sender_id="7", triggered=True)
    assert got.action == "answer"


def test_an_owner_is_let_in_and_never_blocked() -> None:
    rules = AccessSpec.model_validate(
        {
            "owners": {"t": [7]},
            "dm": {"policy": "disabled"},
            "groups": {"policy": "allowlist", "sender_default": "block"},
        }
    )
    dm = admit(rules, gateway="t", chat_type="private", chat_id="7", sender_id="7", triggered=True)
    group = admit(
        rules, gateway="t", chat_type="group", chat_id="-1", sender_id="7", triggered=True
    )
    other = admit(
        rules, gateway="t", chat_type="group", chat_id="-1", sender_id="8", triggered=True
    )
    on_discord = admit(
        rules, gateway="d", chat_type="private", chat_id="7", sender_id="7", triggered=True
    )
    assert (dm.action, group.action) == ("answer", "answer")
    assert (other.action, on_discord.action) == ("drop", "drop")  # owners are per gateway


def test_pairing_lets_in_the_allowlist_and_the_paired_senders_only() -> None:
    rules = AccessSpec.model_validate({"dm": {"policy": "pairing", "allowlist": ["5"]}})

    def action(sender: str, paired: frozenset[str] = frozenset()) -> str:
        return admit(
            rules,
            gateway="t",
            chat_type="private",
            chat_id=sender,
            sender_id=sender,
            triggered=True,
            paired=paired,
        ).action

    assert (action("5"), action("6"), action("6", frozenset({"6"}))) == ("answer", "drop", "answer")
