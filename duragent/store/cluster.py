"""What the nodes of one workspace share to do each thing once: ``Cluster``, in memory here.

Three protocols (``cluster_protocols``): ``InboundLedger`` (a platform message handled once),
``LeaderLeases`` (a loop such as long polling run on one node) and ``RunClaims`` (a schedule
due time started once). With ``store.backend: postgres`` they are tables every node sees
(``postgres.cluster``); with files there is one node (the serve lock keeps a second server
off the workspace), and they are this process's memory, made here: a bounded ledger, leases
this node always holds, and a set of claimed due times.

The memory classes are also the reference the contract suite compares the PostgreSQL ones
with (``tests/store/test_cluster_contract.py``): several ``MemoryCluster.node`` views over one
``MemoryCluster`` behave as several nodes over one database.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from duragent.store.cluster_protocols import (
    ClaimOutcome,
    InboundLedger,
    LeaderLeases,
    OrphanedChats,
    PreviewRows,
    RunClaims,
)
from duragent.store.takeovers import TakeOvers

__all__ = ["INBOUND_HOLD_LEASES", "KEPT_CLAIMS", "Cluster", "MemoryCluster", "local_cluster"]

INBOUND_HOLD_LEASES = 2
"""How many leases an inbound claim not settled blocks other nodes (a shared ledger)."""
KEPT_CLAIMS = 100_000
"""Inbound claims and due times a memory ledger keeps (the oldest go first)."""


@dataclass(frozen=True, slots=True)
class Cluster:
    """This node's view of what the nodes share (see module docstring)."""

    inbound: InboundLedger
    leaders: LeaderLeases
    runs: RunClaims
    shared: bool
    """Whether other nodes may serve the workspace too (a database): loops that must run
    once then wait for their leader lease; with files they start at once, as before."""
    orphans: OrphanedChats | None = None
    """Chats of sessions a dead node left (None: one node; its start recovers them all)."""
    takeovers: TakeOvers = field(default_factory=TakeOvers)
    previews: PreviewRows | None = None
    """Where reply previews are recorded for every node (None: in this node's workspace)."""
    """Sessions this node took from a dead node (``takeovers``; one node: never any)."""


@dataclass(slots=True)
class _Claim:
    node: str
    expires: float
    done: bool = False


@dataclass(slots=True)
class _Lease:
    holder: str | None
    expires: float


@dataclass
class MemoryCluster:
    """The shared state, in memory; ``node(name)`` is one node's ``Cluster`` over it."""

    hold_seconds: float = 60.0
    """How long an inbound claim not settled blocks other nodes."""
    lease_seconds: float = 30.0
    clock: Callable[[], float] = time.monotonic
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _claims: OrderedDict[tuple[str, str, str], _Claim] = field(default_factory=OrderedDict)
    _leases: dict[str, _Lease] = field(default_factory=dict)
    _fires: OrderedDict[tuple[str, int], str] = field(default_factory=OrderedDict)

    def node(self, node_id: str, *, shared: bool = True) -> Cluster:
        """Node ``node_id``'s view (``shared``: whether it waits for leader leases)."""
        inbound = _MemoryInbound(self, node_id)
        return Cluster(inbound, _MemoryLeaders(self, node_id), _MemoryRuns(self, node_id), shared)


def local_cluster() -> Cluster:
    """The cluster of a workspace on files: one node, this process."""
    return MemoryCluster().node("local", shared=False)


class _MemoryInbound:
    def __init__(self, shared: MemoryCluster, node_id: str) -> None:
        self._shared = shared
        self._node = node_id

    def claim(self, gateway: str, chat_id: str, message_id: str) -> ClaimOutcome:
        s = self._shared
        key = (gateway, chat_id, message_id)
        now = s.clock()
        with s._lock:
            held = s._claims.get(key)
            if held is not None and (held.done or (held.node != self._node and held.expires > now)):
                return "duplicate" if held.done else "busy"
            s._claims[key] = _Claim(self._node, now + s.hold_seconds)
            s._claims.move_to_end(key)
            while len(s._claims) > KEPT_CLAIMS:
                s._claims.popitem(last=False)
        return "first"

    def settle(self, gateway: str, chat_id: str, message_id: str) -> None:
        s = self._shared
        with s._lock:
            held = s._claims.get((gateway, chat_id, message_id))
            if held is not None:
                held.done = True

    def release(self, gateway: str, chat_id: str, message_id: str) -> None:
        s = self._shared
        key = (gateway, chat_id, message_id)
        with s._lock:
            held = s._claims.get(key)
            if held is not None and held.node == self._node and not held.done:
                del s._claims[key]


class _MemoryLeaders:
    def __init__(self, shared: MemoryCluster, node_id: str) -> None:
        self._shared = shared
        self.node_id = node_id
        self.seconds = shared.lease_seconds

    def acquire(self, name: str) -> bool:
        s = self._shared
        now = s.clock()
        with s._lock:
            lease = s._leases.get(name)
            if lease is None or lease.holder in (None, self.node_id) or lease.expires < now:
                s._leases[name] = _Lease(self.node_id, now + self.seconds)
                return True
        return False

    def release(self, name: str) -> None:
        s = self._shared
        with s._lock:
            lease = s._leases.get(name)
            if lease is not None and lease.holder == self.node_id:
                lease.holder = None


class _MemoryRuns:
    def __init__(self, shared: MemoryCluster, node_id: str) -> None:
        self._shared = shared
        self._node = node_id

    def claim(self, schedule_id: str, due_ms: int) -> bool:
        s = self._shared
        key = (schedule_id, due_ms)
        with s._lock:
            if s._fires.get(key, self._node) != self._node:
                return False  # another node's (its own again: it never started it)
            s._fires[key] = self._node
            while len(s._fires) > KEPT_CLAIMS:
                s._fires.popitem(last=False)
        return True
