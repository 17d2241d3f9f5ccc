"""Turns: the one turn runner every front end calls, and the agentic loop it drives.

```
 front end ──TurnRunner.submit/approve──▶ runner ──run_loop──▶ loop ──▶ LLM, tools
                                          │                   │
                                          └──── SessionHandle (duragent.session) ◀── Recorder
```

- ``runner``: when a turn runs (one loop per session, approvals, cut-short turns);
  ``tickets``: how a submitter waits (``Queued``: a chat's queue answers it; ``Waited``: a
  request awaits its ``Ticket``);
  ``steering``: a message that arrives while its session's loop runs joins it (the one
  implementation: HTTP waits for the loop, a chat queue gives what it left a turn);
  ``inbox``: the running loop's messages, which it read and how it ended (``Steered``
  tickets, ``Steered.needs_own_turn`` the one rule); ``ordering``: a chat's messages
  recorded at once and answered in turns by its queue rules (``TurnRunner.submit``);
  ``driving``: a turn's loop run to its end, and the rest of a turn after an approval.
- ``loop``: the agentic loop, including resuming a call a person decided on;
  ``call_limits``: calls per response and per turn.
- ``context``: what a turn runs with (provider, tools, policy, budget, prompt, recorder);
  ``agent_budget``: an agent's context budget; ``providers``: one LLM client per model;
  ``images``: a turn's photos and files in its requests (images fitted once, off the loop).
- ``endings``: the durable trace of a turn cut short or failed; ``result``: ``TurnResult``,
  the union of ``Complete``, ``AwaitingApproval``, ``Duplicate`` and ``Failed``;
  ``interruptions``: what became of a message whose turn was cut (``Interruption``);
  ``errors``: why an approval was refused (``NoPendingApprovalError``,
  ``ApprovalMismatchError``, both ``ApprovalError``).
- ``sink``: where a streaming front end receives a turn's progress.
- ``between_turns``: the runner's writes outside turns (creating and ending sessions, pins,
  a scheduled message, chatter, deliveries, a failed turn's record); ``lines``: each
  session's turn state (one loop at a time, writes between turns, waiting for a loop or a
  decision without polling, the context kept from ``accept``); ``sessions``:
  ``SessionQueries``, the read-only port front ends read sessions through (they never
  import ``duragent.session``); ``attachments``: ``SessionAttachments``, where a front end
  keeps a message's photos, voice notes and files before submitting it.

Above ``duragent.session`` (it writes through the typed ``SessionHandle``) and below the front
ends. As with ``duragent.session``, front ends use only this namespace, never its modules.
"""

from __future__ import annotations

from duragent.context.summaries import PinnedTooLargeError, PinRefusedError
from duragent.core.approval import DECISIONS, ApprovalDecision
from duragent.store import AttachmentNotFoundError
from duragent.turns.endings import apology_for
from duragent.turns.errors import ApprovalError, ApprovalMismatchError, NoPendingApprovalError
from duragent.turns.inbox import Steered
from duragent.turns.loop import CLIENT_LEFT
from duragent.turns.ordering import Front, Inbound, PendingTurn
from duragent.turns.providers import ProviderPool
from duragent.turns.recorded import Incoming
from duragent.turns.result import (
    AwaitingApproval,
    CallOutcome,
    Complete,
    Duplicate,
    Failed,
    Interruption,
    TurnResult,
)
from duragent.turns.runner import Accepted, TurnRunner
from duragent.turns.sessions import (
    ChatProgress,
    MemoryView,
    PendingApproval,
    SessionAgentMismatchError,
    SessionEndedError,
    SessionInfo,
    SessionNotFoundError,
    SessionQuarantinedError,
    SessionQueries,
    events_to_messages,
)
from duragent.turns.sink import TurnSink
from duragent.turns.tickets import Queued, Ticket, Waited

__all__ = [
    "CLIENT_LEFT",
    "DECISIONS",
    "Accepted",
    "ApprovalDecision",
    "ApprovalError",
    "ApprovalMismatchError",
    "AttachmentNotFoundError",
    "AwaitingApproval",
    "CallOutcome",
    "ChatProgress",
    "Complete",
    "Duplicate",
    "Failed",
    "Front",
    "Inbound",
    "Incoming",
    "Interruption",
    "MemoryView",
    "NoPendingApprovalError",
    "PendingApproval",
    "PendingTurn",
    "PinRefusedError",
    "PinnedTooLargeError",
    "ProviderPool",
    "Queued",
    "SessionAgentMismatchError",
    "SessionEndedError",
    "SessionInfo",
    "SessionNotFoundError",
    "SessionQuarantinedError",
    "SessionQueries",
    "Steered",
    "Ticket",
    "TurnResult",
    "TurnRunner",
    "TurnSink",
    "Waited",
    "apology_for",
    "events_to_messages",
]
