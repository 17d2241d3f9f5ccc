"""What the nodes sharing one workspace ask of storage, as ``Protocol``s.

With ``store.backend: postgres`` several nodes serve one workspace; each thing must then be
done once across them: a platform message taken in once (``InboundLedger``), a loop run on
one node (``LeaderLeases``), a schedule's due time started once (``RunClaims``), the chats of
a node that died finished by another (``OrphanedChats``), and a session owned by one node at
a time (``SharedStorage``, the session leases). Kept apart from ``protocols`` (what a single
node asks of storage) so each file reads as one concern; ``protocols`` still names them all,
and the shared rules written there (durable writes, reads that never invent data) hold here.
Backends: ``cluster`` (one node: this process's memory) and ``postgres`` (tables every node
sees); only the PostgreSQL session store is a ``SharedStorage``.
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from duragent.store.chat_index import ChatKey
from duragent.store.ownership import NodeDirectory

__all__ = [
    "ClaimOutcome",
    "InboundLedger",
    "LeaderLeases",
    "OrphanedChats",
    "PreviewRows",
    "RunClaims",
    "SharedStorage",
]


ClaimOutcome = Literal["first", "duplicate", "busy"]
"""``first``: handle it; ``duplicate``: handled already; ``busy``: another node handles it now."""


class InboundLedger(Protocol):
    """Which platform messages were taken in, shared by every node serving the workspace.

    The same Telegram update, Discord message or external-gateway message delivered to two
    nodes (a webhook retried through a load balancer) is handled by the first claim only.
    A claim lasts a hold (a few lease periods); one whose node died before ``settle`` is taken
    over after it, so a redelivered message is never lost (the session's own platform-id
    de-duplication then recognises one that was recorded after all). Files: one node, so the
    ledger is this process's memory and the session's de-duplication is the durable one.
    """

    def claim(self, gateway: str, chat_id: str, message_id: str) -> ClaimOutcome:
        """Claim the message for this node (see ``ClaimOutcome``)."""
        ...

    def settle(self, gateway: str, chat_id: str, message_id: str) -> None:
        """The claimed message is recorded (or deliberately dropped): a duplicate from now on."""
        ...

    def release(self, gateway: str, chat_id: str, message_id: str) -> None:
        """The claimed message could not be recorded: a redelivery may claim it at once."""
        ...


class LeaderLeases(Protocol):
    """Leases for loops that must run on one node only (long polling, the scheduler's loop)."""

    node_id: str
    seconds: float
    """How long a lease lasts unless renewed: another node takes over after it."""

    def acquire(self, name: str) -> bool:
        """Take or renew the lease ``name`` for this node; whether this node holds it now."""
        ...

    def release(self, name: str) -> None:
        """Give the lease up (this node stops the loop), so another takes over at once."""
        ...


class RunClaims(Protocol):
    """Schedule due times started, one claim per (schedule id, due time) cluster-wide."""

    def claim(self, schedule_id: str, due_ms: int) -> bool:
        """Whether this node may start that due time (False: claimed before, by any node)."""
        ...


class OrphanedChats(Protocol):
    """Chats whose session no live node serves: what another node must finish for them.

    A node that died left its sessions' leases to expire; an undelivered reply, an approval
    never shown or a message never answered in them is then finished elsewhere (the
    gateway's recovery, run by the holder of a leader lease). One node (files) has none.
    """

    def chats(self, gateway: str, *, owned_by: str | None = None) -> list[tuple[str, str]]:
        """``(chat_id, session_id)`` of ``gateway``'s chats whose session's lease expired.

        With ``owned_by`` (a node starting): those whose lease is free or is that node's too.
        """
        ...

    def adopt(self, session_ids: list[str]) -> None:
        """Mark the expired leases of ``session_ids`` free: they were examined and finished."""

    def serving_node(self, gateway: str, chat_id: str) -> str | None:
        """The node holding a live lease on a session of the chat (None: no node serves it)."""
        ...


class PreviewRows(Protocol):
    """The reply previews in chats, where every node finds them (``frontkit.preview_store``).

    One node keeps them as files in its workspace; several keep them here, since the node
    that finishes a chat after a kill may not be the one that streamed into it.
    """

    def save(self, gateway: str, chat_id: str, message_id: str, session_id: str) -> None:
        """Record a preview before its first edit (durable when this returns)."""

    def drop(self, gateway: str, chat_id: str, message_id: str) -> None:
        """Forget a preview (its reply is final in its place, or it was deleted)."""

    def load(self, gateway: str) -> list[tuple[str, str, str]]:
        """``(chat_id, message_id, session_id)`` of the previews recorded in ``gateway``."""
        ...


@runtime_checkable
class SharedStorage(Protocol):
    """A ``SessionStorage`` several nodes share (PostgreSQL): session leases and fresh reads.

    The file and memory backends are not shared (one process owns a workspace: the serve
    lock), so they do not implement this; the session layer checks ``isinstance``. See
    ``store.ownership`` for the errors and ``store/postgres/leases.py`` for the fence.
    """

    @property
    def node_id(self) -> str:
        """This node's name in leases."""
        ...

    @property
    def nodes(self) -> NodeDirectory:
        """The deployment's nodes: where each answers, whether it is alive."""
        ...

    @property
    def lease_seconds(self) -> float:
        """How long a lease lasts without renewal."""
        ...

    @property
    def fenced_writes(self) -> int:
        """Writes of this node the epoch fence refused since start."""
        ...

    def own(self, session_id: str) -> None:
        """Claim the session for this node before loading it (a new epoch fences the old one).

        ``LeaseHeldError`` when another node's lease is live.
        """
        ...

    def renew_leases(self) -> list[str]:
        """Renew every lease this node holds, in one round trip; the sessions it lost."""
        ...

    def fetch_chat(self, key: ChatKey) -> str | None:
        """The chat's session as stored now (another node may have mapped it); may block."""
        ...

    def fetch_chat_sessions(self, gateway: str, chat_id: str) -> list[tuple[ChatKey, str]]:
        """Every agent's session of one chat as stored now; may block.

        Another node may have mapped one since this node loaded the map.
        """
        ...

    def map_chat(self, key: ChatKey, session_id: str, replacing: str | None) -> str:
        """Map the chat to ``session_id`` if it still maps to ``replacing``; the session it maps.

        One insert wins when two nodes make a chat's first session at once (the loser is told
        the winner's session); may block.
        """
        ...
