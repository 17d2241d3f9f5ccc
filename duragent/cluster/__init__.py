"""How the nodes of one deployment share work: the one home of node-to-node coordination.

With a store several nodes share (``store.backend: postgres``) each session lives on one node
at a time and some loops must run on one node only. The mechanisms that keep it so were
spread over ``session``, ``frontkit`` and ``scheduler``; they live here, together:

- ``leases``: ``LeaseKeeper``, this node's session leases renewed in one round trip, and the
  actors of the ones it lost stopped (a lease fences a session to one node);
- ``chat_claims``: ``map_created_session``, a chat's new session mapped once across nodes
  when its first message reaches two nodes at once;
- ``leaders``: ``run_as_leader``, a loop that must run once per deployment (Telegram
  polling, a Discord connection, the scheduler, the chats a dead node left) run while this
  node holds its leader lease;
- ``hops``: ``Hops``, the one scheme for signed requests between nodes (signature, the
  live-or-gone test, the client), used by the HTTP forwarding and the relay;
- ``relay``: ``OwnerRelay``, a payload handed to the node that owns its session, or served
  here once a gone owner's lease ran out (chat messages: ``frontkit.relayed`` encodes them).

Not here: what the nodes share is stored by ``store`` (``store.cluster``,
``store.cluster_protocols``, ``store.ownership``, ``store.postgres``), as sessions are; the
HTTP endpoints between nodes are the HTTP adapter's (``gateways/http/cluster``). A front
end's use of these stays with it: ``scheduler.leading`` runs the scheduler's loop under
``run_as_leader``, and ``scheduler.claiming`` (a due time claimed through an outage) is
scheduling logic (due times, their grace, the scheduler's clock) over the store's
``RunClaims``.

Its own layer, below ``session`` (whose registry keeps the leases and maps chats) and above
``store``: it imports the store, ``observability`` and ``errors`` only, never a session, the
kit or a front end, which all may import it.
"""

from __future__ import annotations

from duragent.cluster.chat_claims import (
    ANY_MAPPING,
    AnyMapping,
    SessionMaker,
    map_created_session,
)
from duragent.cluster.hops import Hops
from duragent.cluster.leaders import run_as_leader
from duragent.cluster.leases import LeaseKeeper
from duragent.cluster.relay import (
    RELAY_PATH,
    OwnerRelay,
    Receiver,
    RelayFailedError,
    Unpacked,
)

__all__ = [
    "ANY_MAPPING",
    "RELAY_PATH",
    "AnyMapping",
    "Hops",
    "LeaseKeeper",
    "OwnerRelay",
    "Receiver",
    "RelayFailedError",
    "SessionMaker",
    "Unpacked",
    "map_created_session",
    "run_as_leader",
]
