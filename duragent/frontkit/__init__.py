"""The front-end kit: what every front end shares, so no gateway copies another's glue.

```
 platform SDK ──Inbound──▶ ChatTurns ──▶ TurnRunner (duragent.turns)
       ▲                      │  session_for_chat, typing, run / approve
       │                      ▼
 OutboundPort ◀──────────  Delivery   (each reply once; steered joiners send nothing)
```

- ``outbound``: the ``OutboundPort`` Protocol a chat gateway implements (``send_text``,
  ``send_typing``, ``ask_approval``, ``edit``), ``ChatRef``, ``SentMessage``;
  ``memory``: ``MemoryOutbound``, the port in memory, for tests.
- ``delivery``: ``Delivery``, a ``TurnResult`` handed to its chat exactly once, recorded as
  a durable ``delivery`` event.
- ``chat``: ``ChatTurns``, an inbound chat message through to its delivered reply.
- ``running``: ``await_turn``, waiting for a turn that continues under the runtime's
  ``BackgroundTasks`` if the waiter gives up (HTTP's 408, a cancelled request).

The outcomes themselves (``Complete``, ``AwaitingApproval``, ``Duplicate``, ``Failed``) and
the approval errors live in ``duragent.turns``, which returns and raises them.

Its own layer, below ``gateways.*`` and ``scheduler`` and above ``turns``, so every front end
(HTTP, Telegram, Discord, the scheduler) can import it while they still never import each
other. Like them it uses only the ``duragent.session`` and ``duragent.turns`` namespaces and
never a platform SDK.
"""

from __future__ import annotations

from duragent.frontkit.chat import ChatTurns, Inbound
from duragent.frontkit.delivery import Delivery
from duragent.frontkit.memory import MemoryOutbound, Sent
from duragent.frontkit.outbound import ChatRef, OutboundPort, SentMessage
from duragent.frontkit.running import await_turn

__all__ = [
    "ChatRef",
    "ChatTurns",
    "Delivery",
    "Inbound",
    "MemoryOutbound",
    "OutboundPort",
    "Sent",
    "SentMessage",
    "await_turn",
]
