"""The front-end kit: what every front end shares, so no gateway copies another's glue.

```
 platform SDK ──Inbound──▶ ChatFront ──▶ SessionQueues ──▶ TurnRunner.submit (the line's order)
       ▲                   (session)     (recorded)              │
       │                                                         ▼ each due turn
       │                                 Delivery ◀──────── ChatTurns (typing, answer / approve)
       │                                    │
 OutboundPort ◀─────────────────────────────┘   (each reply once; steered joiners send nothing)
```

- ``outbound``: the ``OutboundPort`` Protocol a chat gateway implements (``pieces``,
  ``send_text``, ``send_file``, ``send_typing``, ``ask_approval``, ``edit``,
  ``answer_button``), ``ChatRef``, ``OutgoingFile``, ``SentMessage``; ``memory``:
  ``MemoryOutbound``, the port in memory, for tests.
- ``delivery``: ``Delivery``, a ``TurnResult`` handed to its chat exactly once, part by part
  (each chat message of its text, then each file: ``reply_parts``), each part but the last
  recorded as a durable ``delivery`` event with ``parts``, the whole reply as one without.
- ``chat``: ``ChatTurns``, an inbound chat message through to its delivered reply.
- ``queue``: ``SessionQueues``, a chat gateway's messages submitted to their session's line
  (``TurnRunner.submit``: the order, batch / sequential / drop, overflow and debounce, is
  ``turns.ordering``) and each due turn run and delivered in the chat (the line's ``Front``).
- ``notices``: ``SessionNotices``, news no person typed (a background job ended) added to
  its session and answered there, the reply delivered as a chat's; ``ProcessNotices``, the
  background jobs' port onto it.
- ``relayed``: ``ChatRelay``, a chat message that reached a node other than its session's
  owner (Telegram polling, a load-balanced plugin) encoded and handed to the owner over the
  cluster's relay (``cluster.OwnerRelay``, a signed hop), and those handed here run through
  their gateway's pipeline.
- ``recovery``: ``recover_chats``, at a gateway's start: replies written and not delivered
  are sent once, messages accepted and not answered are answered.
- ``inbound``: ``InboundMessage``, ``Sender``, ``ButtonPress`` (what a platform hands over);
  ``gateway``: ``ChatFront``, the pipeline a chat adapter calls (route → access → commands →
  session → dispositions and mention gating → label → ``Dispatcher``), built from
  ``routing`` (``Router``), ``access`` (``admit``), ``commands`` (``/reset``, ``/status``),
  ``group_context`` (the durable context buffer's block) and ``approvals`` (buttons,
  requester check, toasts).
- ``media``: ``MediaRef`` (a file a message carries, not yet downloaded), ``MediaSource``
  (how a platform's files are downloaded), ``MediaLimits`` / ``MediaSettings``;
  ``media_intake``: ``MediaIntake``, a message's files kept in its session before the
  message is recorded (limits, transcription, the chat's files folder); ``media_index``:
  which platform files a session holds already (nothing downloaded twice).

The outcomes themselves (``Complete``, ``AwaitingApproval``, ``Duplicate``, ``Failed``) and
the approval errors live in ``duragent.turns``, which returns and raises them; how nodes
share work (leader leases, ``run_as_leader``; signed hops; the relay) lives in
``duragent.cluster``, one layer down, which front ends import directly.

Its own layer, below ``gateways.*`` and ``scheduler`` and above ``turns``, so every front end
(HTTP, Telegram, Discord, the scheduler) can import it while they still never import each
other. Like them it uses only the ``duragent.session`` and ``duragent.turns`` namespaces and
never a platform SDK.
"""

from __future__ import annotations

from duragent.frontkit.access import Admission, admit, mention_context
from duragent.frontkit.approvals import ApprovalButtons, Button, approval_buttons, approval_prompt
from duragent.frontkit.chat import ChatTurns, Inbound
from duragent.frontkit.chats import ChatHandler, GatewayChats, InboundBusyError, gateway_chats
from duragent.frontkit.delivery import Deliveries, Delivery
from duragent.frontkit.gateway import ChatFront
from duragent.frontkit.inbound import ButtonPress, ChatType, InboundMessage, MediaRef, Sender
from duragent.frontkit.media import (
    Fetched,
    MediaLimits,
    MediaSettings,
    MediaSource,
    MediaTooLargeError,
    MediaUnavailableError,
)
from duragent.frontkit.media_intake import MediaIntake
from duragent.frontkit.memory import MemoryOutbound, Sent
from duragent.frontkit.notices import ProcessNotices, SessionNotices
from duragent.frontkit.outbound import (
    ChatRef,
    MeteredOutbound,
    OutboundPort,
    OutgoingFile,
    SentMessage,
    metered,
)
from duragent.frontkit.queue import Dispatcher, SessionQueues
from duragent.frontkit.recovery import RecoveryReport, recover_chats
from duragent.frontkit.relayed import ChatRelay
from duragent.frontkit.routing import RouteQuery, Router
from duragent.frontkit.service import ChatGateway, WebhookReceiver
from duragent.frontkit.unsaved import NOT_SAVED, PAUSES, record_or_tell

__all__ = [
    "NOT_SAVED",
    "PAUSES",
    "Admission",
    "ApprovalButtons",
    "Button",
    "ButtonPress",
    "ChatFront",
    "ChatGateway",
    "ChatHandler",
    "ChatRef",
    "ChatRelay",
    "ChatTurns",
    "ChatType",
    "Deliveries",
    "Delivery",
    "Dispatcher",
    "Fetched",
    "GatewayChats",
    "Inbound",
    "InboundBusyError",
    "InboundMessage",
    "MediaIntake",
    "MediaLimits",
    "MediaRef",
    "MediaSettings",
    "MediaSource",
    "MediaTooLargeError",
    "MediaUnavailableError",
    "MemoryOutbound",
    "MeteredOutbound",
    "OutboundPort",
    "OutgoingFile",
    "ProcessNotices",
    "RecoveryReport",
    "RouteQuery",
    "Router",
    "Sender",
    "Sent",
    "SentMessage",
    "SessionNotices",
    "SessionQueues",
    "WebhookReceiver",
    "admit",
    "approval_buttons",
    "approval_prompt",
    "gateway_chats",
    "mention_context",
    "metered",
    "record_or_tell",
    "recover_chats",
]
