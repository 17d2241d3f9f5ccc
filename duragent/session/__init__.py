"""Session actors (pykka), their journal, the registry and the typed handle on a session.

```
 asyncio code ──handle.op()──▶ SessionActor (pykka thread, one per live session)
      ▲                        │  SessionState.apply(event)   (pure rules, same for replay)
      └── ActorReply via       ├─▶ EventLog.append + fsync    (events.jsonl)
          call_soon_threadsafe └─▶ SnapshotFile.write         (state.yaml, atomic)
```

- ``state``: checkpointed/pending messages, Layer 1 window, tool-result placement.
- ``actor``: the thread: create or load (quarantine what cannot be trusted), dispatch, stop.
- ``operations``: what a loaded session serves, each an ``@op`` (``ops``: the typed actor
  boundary, a request carries the method itself; ``answers``: what they hand back);
  ``journal``: durability rules.
- ``handle``: those operations as typed async methods (the only way above the registry).
- ``bridge``: non-blocking asks with timeouts; ``admission``/``gate``: asks in flight.
- ``registry``: lazy start, chat → session; ``eviction``: LRU, idle and descriptor bounds;
  ``listing``: every session on disk, unloadable ones included.
- ``reader``: the ``session`` tool's port over the registry.
- ``progress``: where a chat session stands (undelivered reply, unanswered message), read
  from the snapshot header when it is current, for a gateway's recovery at start.

How several nodes share the sessions (the leases the registry renews, a new chat's session
mapped once across nodes) is ``duragent.cluster``, one layer down, which the registry uses.

Turns (the agentic loop and the runner every front end calls) live in ``duragent.turns``,
one layer up. This package's own namespace is the surface front ends (``gateways.*``,
``scheduler``) may use; its submodules are internals (import-linter forbids them to front
ends), so what a front end needs is exported here.
"""

from __future__ import annotations

from duragent.core.approval import DECISIONS, ApprovalDecision, PendingApproval
from duragent.session.actor import (
    NewSession,
    SessionInfo,
    SessionQuarantinedError,
    UserMessageResult,
)
from duragent.session.bridge import SessionTimeoutError, SessionUnavailableError
from duragent.session.handle import SessionHandle
from duragent.session.history import events_to_messages
from duragent.session.operations import SessionAgentMismatchError, SessionEndedError
from duragent.session.progress import ChatProgress
from duragent.session.registry import RegistrySettings, SessionNotFoundError, SessionRegistry
from duragent.session.state import SessionState, actor_message_limit

__all__ = [
    "DECISIONS",
    "ApprovalDecision",
    "ChatProgress",
    "NewSession",
    "PendingApproval",
    "RegistrySettings",
    "SessionAgentMismatchError",
    "SessionEndedError",
    "SessionHandle",
    "SessionInfo",
    "SessionNotFoundError",
    "SessionQuarantinedError",
    "SessionRegistry",
    "SessionState",
    "SessionTimeoutError",
    "SessionUnavailableError",
    "UserMessageResult",
    "actor_message_limit",
    "events_to_messages",
]
