"""Who may answer an approval in a chat: one table for every platform (``approval_rights``)."""

from __future__ import annotations

import pytest

from duragent.agents.spec import AccessSpec
from duragent.frontkit.approval_rights import (
    ALWAYS_OWNERS_ONLY,
    BLOCKED,
    NOT_ADMITTED,
    NOT_REQUESTER,
    UNASKED_OWNERS_ONLY,
    refusal,
    unanswerable_note,
)
from duragent.turns import ApprovalDecision

ONCE, ALWAYS, DENY = (
    ApprovalDecision.ALLOW_ONCE,
    ApprovalDecision.ALLOW_ALWAYS,
    ApprovalDecision.DENY,
)
OWNER, MEMBER, OTHER, BLOCKED_ID = "1", "2", "3", "4"

RULES = AccessSpec.model_validate(
    {
        "owners": {"telegram": [OWNER]},
        "dm": {"policy": "allowlist", "allowlist": [MEMBER]},
        "groups": {"sender_overrides": {BLOCKED_ID: "block", OWNER: "block"}},
    }
)


@pytest.mark.parametrize(
    ("chat_type", "presser", "requester", "decision", "expected"),
    [
        # an owner answers anything, even a group rule naming them blocked
        ("group", OWNER, None, ALWAYS, None),
        ("group", OWNER, MEMBER, ALWAYS, None),
        ("group", OWNER, MEMBER, DENY, None),
        ("dm", OWNER, None, ONCE, None),
        # the requester: once or deny, never always
        ("group", MEMBER, MEMBER, ONCE, None),
        ("group", MEMBER, MEMBER, DENY, None),
        ("group", MEMBER, MEMBER, ALWAYS, ALWAYS_OWNERS_ONLY),
        ("dm", MEMBER, MEMBER, ONCE, None),
        # someone else's approval
        ("group", OTHER, MEMBER, ONCE, NOT_REQUESTER),
        ("group", OTHER, MEMBER, ALWAYS, NOT_REQUESTER),
        # nobody in the chat asked (a schedule, a job's notice, a hook): owners only
        ("group", MEMBER, None, ONCE, UNASKED_OWNERS_ONLY),
        ("group", MEMBER, None, DENY, UNASKED_OWNERS_ONLY),
        ("dm", MEMBER, None, ONCE, UNASKED_OWNERS_ONLY),
        # blocked: nothing, not even their own request
        ("group", BLOCKED_ID, None, ONCE, BLOCKED),
        ("group", BLOCKED_ID, BLOCKED_ID, ONCE, BLOCKED),
        ("group", BLOCKED_ID, MEMBER, DENY, BLOCKED),
        # a chat of unknown type may be a group: its block rule holds
        (None, BLOCKED_ID, BLOCKED_ID, ONCE, BLOCKED),
        (None, MEMBER, MEMBER, ONCE, None),
        # a stranger the chat gate refuses (not on the DM allowlist): nothing
        ("dm", OTHER, OTHER, ONCE, NOT_ADMITTED),
        ("dm", OTHER, None, ONCE, NOT_ADMITTED),
    ],
)
def test_who_may_answer_an_approval(
    chat_type: str | None,
    presser: str,
    requester: str | None,
    decision: ApprovalDecision,
    expected: str | None,
) -> None:
    chat_id = presser if chat_type == "dm" else "-100"
    got = refusal(
        RULES,
        gateway="telegram",
        chat_type=chat_type,
        chat_id=chat_id,
        presser_id=presser,
        requester_id=requester,
        decision=decision,
    )
    assert got == expected


def test_an_owner_is_an_owner_on_their_own_gateway_only() -> None:
    got = refusal(
        RULES,
        gateway="discord",
        chat_type="group",
        chat_id="-100",
        presser_id=OWNER,
        requester_id=None,
        decision=ONCE,
    )
    assert got == BLOCKED  # "1" on Discord is someone else, and the group blocks "1"


def test_without_an_access_block_an_approval_nobody_asked_for_is_nobodys_in_the_chat() -> None:
    kwargs = {"gateway": "telegram", "chat_type": "dm", "chat_id": MEMBER}
    assert refusal(None, **kwargs, presser_id=MEMBER, requester_id=MEMBER, decision=ONCE) is None
    assert (
        refusal(None, **kwargs, presser_id=MEMBER, requester_id=None, decision=ONCE)
        == UNASKED_OWNERS_ONLY
    )
    assert (
        refusal(None, **kwargs, presser_id=MEMBER, requester_id=MEMBER, decision=ALWAYS)
        == ALWAYS_OWNERS_ONLY
    )


@pytest.mark.parametrize(
    ("access", "gateway", "requester", "noted"),
    [
        (None, "telegram", None, True),
        (RULES, "discord", None, True),  # owners named for telegram only
        (RULES, "telegram", None, False),
        (None, "telegram", MEMBER, False),  # the requester may answer
    ],
)
def test_a_chat_is_told_when_nobody_in_it_may_answer(
    access: AccessSpec | None, gateway: str, requester: str | None, noted: bool
) -> None:
    note = unanswerable_note(
        access, gateway=gateway, agent="bot", session_id="s1", requester_id=requester
    )
    assert (note is not None) is noted
    if note is not None:
        assert f"spec.access.owners.{gateway} in agents/bot/agent.yaml" in note
        assert "POST /api/v1/sessions/s1/approve" in note


def test_toasts_fit_a_telegram_callback_answer() -> None:
    for text in (NOT_REQUESTER, UNASKED_OWNERS_ONLY, ALWAYS_OWNERS_ONLY, BLOCKED, NOT_ADMITTED):
        assert len(text) <= 200  # answerCallbackQuery's limit
