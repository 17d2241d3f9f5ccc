"""Who may write a session when several nodes share one store: the errors of session leases.

A shared store (PostgreSQL) lets one node at a time own a session's actor: it *claims* a
lease before loading the session and every write is fenced by the lease's epoch
(``store/postgres/leases.py``). The layers above see two outcomes, defined here without any
driver so the session layer and the HTTP gateway can name them:

- ``LeaseHeldError``: another live node owns the session. The request belongs there
  (forwarded by the HTTP gateway), or here once that lease expires (``expires_in``).
- ``FencedWriteError``: this node *lost* the session (paused or partitioned past its lease,
  another node claimed it). Nothing was written; the actor must go, and the request is
  served again by whoever owns the session now.

File and memory stores never raise either: one process owns a workspace (the serve lock).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from duragent.errors import DuragentError, StorageError

__all__ = ["FencedWriteError", "LeaseHeldError", "NodeDirectory", "NodeRecord"]


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """One node of a deployment as the shared store knows it."""

    node_id: str
    base_url: str
    heartbeat_age: float
    """Seconds since its last heartbeat (by the database's clock, so skew does not matter)."""


class NodeDirectory(Protocol):
    """Where the nodes of a deployment answer (``store/postgres/nodes.py``); calls may block."""

    node_id: str

    def register(self, base_url: str) -> None:
        """Announce this node at ``base_url``."""
        ...

    def leave(self) -> None:
        """Remove this node (a clean stop)."""
        ...

    def lookup(self, node_id: str) -> NodeRecord | None:
        """``node_id``'s address and heartbeat age, or None when it is not registered."""
        ...

    def secret(self) -> bytes:
        """The key node-to-node requests are signed with."""
        ...


class LeaseHeldError(DuragentError):
    """Another live node owns the session (its lease has not expired)."""

    def __init__(self, session_id: str, owner: str, expires_in: float) -> None:
        self.session_id = session_id
        self.owner = owner
        self.expires_in = max(0.0, expires_in)
        """Seconds until the owner's lease runs out unless it renews it."""
        super().__init__(
            f"session {session_id} is owned by node {owner} (lease runs {self.expires_in:.1f} s "
            "more): send the request to that node, or wait for its lease to expire"
        )


class FencedWriteError(StorageError):
    """A write under an epoch that is no longer the session's: this node lost the session.

    Nothing was written. The owner must stop its actor for the session (another node, or a
    newer actor of this one, owns it now) and never retry the write under the old epoch.
    """

    def __init__(self, session_id: str, held: int, current: int | None, owner: str | None) -> None:
        self.session_id = session_id
        self.held_epoch = held
        self.current_epoch = current
        self.owner = owner
        now = "is no longer live" if current is None else f"is at epoch {current}"
        by = f" (owned by node {owner})" if owner else ""
        super().__init__(
            f"writing session {session_id}",
            OSError(0, f"stale epoch {held}: the session {now}{by}; this write was refused"),
        )
