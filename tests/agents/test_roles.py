"""Roles from ``spec.access`` (owners per gateway, members, strangers, blocked); a turn's caller."""

from __future__ import annotations

import pytest

from duragent.agents.access_spec import AccessSpec
from duragent.agents.roles import caller_for, role_of
from duragent.core.caller import OPERATOR, Caller, ChatRef

RULES = AccessSpec.model_validate(
    {
        "owners": {"telegram": [100], "discord": ["900"]},
        "dm": {"policy": "allowlist", "allowlist": ["5"]},
        "groups": {"sender_overrides": {"13": "block"}},
    }
)


@pytest.mark.parametrize(
    ("gateway", "chat_type", "sender", "role"),
    [
        ("telegram", "private", "100", "owner"),
        ("telegram", "group", "100", "owner"),
        ("discord", "private", "100", "stranger"),  # an owner on Telegram is nobody on Discord
        ("discord", "dm", "900", "owner"),
        ("telegram", "private", "5", "member"),
        ("telegram", "private", "6", "stranger"),
        ("telegram", "group", "6", "member"),
        ("telegram", "group", "13", "blocked"),
    ],
)
def test_a_senders_role_comes_from_the_access_rules(
    gateway: str, chat_type: str, sender: str, role: str
) -> None:
    got = role_of(RULES, gateway=gateway, chat_type=chat_type, chat_id="-1", sender_id=sender)
    assert got == role


def test_owner_ids_are_exact_never_patterns() -> None:
    with pytest.raises(ValueError, match="no wildcards"):
        AccessSpec.model_validate({"owners": {"telegram": ["1*"]}})


def test_admins_is_read_as_owners() -> None:
    rules = AccessSpec.model_validate({"admins": {"telegram": ["7"]}})
    assert role_of(rules, gateway="telegram", chat_type="group", chat_id="-1", sender_id="7") == (
        "owner"
    )


def test_a_session_without_a_chat_is_the_operators() -> None:
    got = caller_for(RULES, gateway=None, chat_type=None, chat_id=None, sender_id=None)
    assert got == OPERATOR
    assert got.reaches_all


def test_a_turn_nobody_sent_has_a_members_reach_in_its_chat() -> None:
    got = caller_for(RULES, gateway="telegram", chat_type="group", chat_id="-1", sender_id=None)
    assert (got.role, got.chat, got.reaches_all) == ("member", ChatRef("telegram", "-1"), False)


def test_tools_keep_to_the_chat_unless_an_owner_opted_into_agent_scope_in_a_dm() -> None:
    wide = AccessSpec.model_validate({"owners": {"telegram": ["100"]}, "tool_scope": "agent"})

    def caller(rules: AccessSpec, chat_type: str, sender: str) -> Caller:
        return caller_for(
            rules, gateway="telegram", chat_type=chat_type, chat_id="-1", sender_id=sender
        )

    assert not caller(RULES, "private", "100").reaches_all  # owner, but tool_scope: chat
    assert caller(wide, "private", "100").reaches_all
    assert not caller(wide, "group", "100").reaches_all  # others' words are in a group's turn
    assert not caller(wide, "private", "5").reaches_all


def test_a_caller_reaches_its_own_chat_only() -> None:
    mine, theirs = ChatRef("telegram", "1"), ChatRef("telegram", "2")
    caller = Caller(role="member", chat=mine, sender_id="7")
    assert caller.may_reach(mine)
    assert not caller.may_reach(theirs)
    assert not caller.may_reach(None)  # the operator's things belong to no chat
    assert OPERATOR.may_reach(theirs)
    assert OPERATOR.may_reach(None)


def test_in_a_group_an_owners_turn_acts_for_a_member() -> None:
    """Others' messages are batched or steered into a group turn and their chatter quoted."""
    for kind in ("group", "supergroup", None):
        got = caller_for(RULES, gateway="telegram", chat_type=kind, chat_id="-1", sender_id="100")
        assert (got.role, got.is_owner) == ("member", False)
    dm = caller_for(RULES, gateway="telegram", chat_type="private", chat_id="100", sender_id="100")
    assert dm.is_owner


def test_a_paired_dm_sender_is_a_member() -> None:
    rules = AccessSpec.model_validate({"dm": {"policy": "pairing"}})
    common = {"gateway": "telegram", "chat_type": "private", "chat_id": "6", "sender_id": "6"}
    assert caller_for(rules, **common).role == "stranger"
    assert caller_for(rules, **common, paired=frozenset({"6"})).role == "member"
