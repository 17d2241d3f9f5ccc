"""Approval buttons' payloads, their parsing, and the toast texts."""

from __future__ import annotations

import pytest

from duragent.frontkit.approvals import (
    approval_buttons,
    call_tag,
    command_preview,
    parse_button,
    toast_text,
)
from duragent.turns import ApprovalDecision


def test_the_buttons_are_allow_once_allow_always_deny_with_a_tag_of_the_call() -> None:
    buttons = approval_buttons("toolu_01A09q90qw90lq917835lq9")
    tag = call_tag("toolu_01A09q90qw90lq917835lq9")
    assert [b.label for b in buttons] == ["Allow Once", "Allow Always", "Deny"]
    assert [b.data for b in buttons] == [
        f"approve:allow_once:{tag}",
        f"approve:allow_always:{tag}",
        f"approve:deny:{tag}",
    ]
    assert all(len(b.data.encode()) <= 64 for b in buttons)  # Telegram's callback_data limit
    assert call_tag("call_2") != tag


@pytest.mark.parametrize(
    ("data", "parsed"),
    [
        ("approve:allow_once", ("allow_once", None)),
        ("approve:deny:ab12cd34", ("deny", "ab12cd34")),
        ("approve:deny:", ("deny", None)),
        ("approve:maybe", ("maybe", None)),
        ("approve", None),
        ("page:2", None),
        ("", None),
    ],
)
def test_payloads_parse_in_the_tagged_and_the_reference_form(
    data: str, parsed: tuple[str, str | None] | None
) -> None:
    assert parse_button(data) == parsed


@pytest.mark.parametrize(
    ("command", "preview"),
    [
        ("ls -la", "ls -la"),
        (
            "npm install --save-dev some-very-long-package-name",
            "npm install --save-dev some-very-long-pa...",
        ),
        ("echo 'hello'\necho 'world'", "echo 'hello'"),
        ("x" * 40, "x" * 40),
        ("é" * 30, "é" * 20 + "..."),  # 2-byte characters: cut at 40 bytes, never inside one
        ("a" + "€" * 20, "a" + "€" * 13 + "..."),
        ("", ""),
    ],
)
def test_the_preview_is_the_first_line_cut_at_40_bytes(command: str, preview: str) -> None:
    assert command_preview(command) == preview


@pytest.mark.parametrize(
    ("decision", "toast"),
    [
        (ApprovalDecision.ALLOW_ONCE, "✓ Running: rm -rf build"),
        (ApprovalDecision.ALLOW_ALWAYS, "✓ Always allowed: rm -rf build"),
        (ApprovalDecision.DENY, "✗ Denied: rm -rf build"),
    ],
)
def test_the_toasts_are_the_references(decision: ApprovalDecision, toast: str) -> None:
    assert toast_text(decision, "rm -rf build\nand more") == toast
