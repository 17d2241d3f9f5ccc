"""Why ``TurnRunner.approve`` refused a decision, as classes a front end can tell apart.

A front end answers "nothing waits for a decision" differently from "a decision for another
call" (HTTP: 404 and 409; a chat: "that request has expired" and "that is not the request
waiting"), so each is its own class instead of a sentence to match on.
"""

from __future__ import annotations

from duragent.errors import DuragentError

__all__ = ["ApprovalError", "ApprovalMismatchError", "NoPendingApprovalError"]


class ApprovalError(DuragentError):
    """An approval request does not match what the session is waiting for.

    Raised as itself for a decision that is not one of ``DECISIONS`` and for an allow-always
    pattern that could not be saved (the approval stays pending).
    """


class NoPendingApprovalError(ApprovalError):
    """The session waits for no decision (never asked, or already decided)."""

    def __init__(self) -> None:
        super().__init__("no pending approval for this session")


class ApprovalMismatchError(ApprovalError):
    """The session waits for a decision on another call."""

    def __init__(self, expected: str, got: str) -> None:
        super().__init__(f"call_id mismatch: expected '{expected}', got '{got}'")
        self.expected = expected
        self.got = got
