"""``Approving``: a person's decision on a paused tool call, and the rest of its turn.

Kept apart from ``runner`` (turns and their concurrency); ``TurnRunner`` is an
``Approving``. The decision is written under the session's line lock, like a turn's records,
and everyone waiting for a decision is told (``Lines.approvals_changed``).
"""

from __future__ import annotations

from collections.abc import Callable

from duragent.core.approval import DECISIONS, ApprovalDecision
from duragent.errors import StorageError
from duragent.observability.logctx import turn_scope
from duragent.session import SessionRegistry
from duragent.turns.driving import Resumed, TurnDriver
from duragent.turns.errors import ApprovalError
from duragent.turns.lines import Line, Lines
from duragent.turns.sink import TurnSink

__all__ = ["Approving"]


def _recorded(lines: Lines, line: Line, seq: int, tell: Callable[[int], None] | None) -> None:
    """The decision is on disk: note it for ``approve``'s error path, tell the waiters."""
    line.decision_seq = seq
    line.paused = None  # decided; its turn may pause again: the session says
    lines.approvals_changed()
    if tell is not None:
        tell(seq)


class Approving:
    """Resolve a pending approval and continue its turn (see module docstring)."""

    _registry: SessionRegistry
    _lines: Lines
    _driver: TurnDriver

    async def approve(
        self,
        session_id: str,
        call_id: str,
        decision: ApprovalDecision | str,
        *,
        sink: TurnSink | None = None,
        on_recorded: Callable[[int], None] | None = None,
    ) -> Resumed:
        """Resolve the pending approval and continue the turn it paused.

        ``on_recorded`` gets the decision's seq once it is on disk (before the call runs).

        ``decision`` is an ``ApprovalDecision`` or its wire name (anything else raises
        ``ApprovalError``). Nothing pending raises ``NoPendingApprovalError``; a pending call
        other than ``call_id`` raises ``ApprovalMismatchError`` (both ``ApprovalError``s).
        """
        if decision not in DECISIONS:
            raise ApprovalError(f"decision must be one of {', '.join(DECISIONS)}, got {decision!r}")
        with turn_scope(session_id), self._lines.hold(session_id) as active:
            active.decision_seq = None
            try:
                async with active.lock:
                    return await self._driver.approve(
                        self._registry.handle(session_id),
                        call_id,
                        ApprovalDecision(decision),
                        sink,
                        on_recorded=lambda seq: _recorded(self._lines, active, seq, on_recorded),
                    )
            except StorageError as exc:  # the decision on disk must not be sent again
                if active.decision_seq is None:
                    raise
                raise exc.after_recording(active.decision_seq) from exc
