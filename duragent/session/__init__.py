"""Session actors (pykka), the registry, and (with the agentic-loop work) the one turn runner.

```
 asyncio code ──ask(op)──▶ SessionActor (pykka thread, one per live session)
      ▲                        │  SessionState.apply(event)   (pure rules, same for replay)
      └── Reply via            ├─▶ EventLog.append + fsync    (events.jsonl)
          call_soon_threadsafe └─▶ SnapshotFile.write         (state.yaml, atomic)
```

- ``state``: checkpointed/pending messages, Layer 1 window, tool-result placement.
- ``actor``: the thread: create or load (quarantine what cannot be trusted), dispatch, stop.
- ``operations``: what a loaded session serves (``op_<name>``); ``journal``: durability rules.
- ``bridge``: non-blocking asks with timeouts.
- ``registry``: lazy start, chat → session; ``eviction``: LRU, idle and descriptor bounds;
  ``listing``: every session on disk, unloadable ones included.

This package's own namespace is the surface front ends (``gateways.*``, ``scheduler``) may
use; its submodules are internals (import-linter forbids them to front ends), so what a front
end needs is exported here.
"""

from __future__ import annotations

from duragent.session.actor import (
    NewSession,
    SessionInfo,
    SessionQuarantinedError,
    UserMessageResult,
)
from duragent.session.bridge import SessionTimeoutError, SessionUnavailableError
from duragent.session.history import events_to_messages
from duragent.session.loop import CLIENT_LEFT
from duragent.session.registry import RegistrySettings, SessionNotFoundError, SessionRegistry
from duragent.session.state import SessionState, actor_message_limit
from duragent.session.turn import DECISIONS, ApprovalError, TurnResult, TurnRunner

__all__ = [
    "CLIENT_LEFT",
    "DECISIONS",
    "ApprovalError",
    "NewSession",
    "RegistrySettings",
    "SessionInfo",
    "SessionNotFoundError",
    "SessionQuarantinedError",
    "SessionRegistry",
    "SessionState",
    "SessionTimeoutError",
    "SessionUnavailableError",
    "TurnResult",
    "TurnRunner",
    "UserMessageResult",
    "actor_message_limit",
    "events_to_messages",
]
