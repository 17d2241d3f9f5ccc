"""Plain data shared by every layer: messages, tool calls, events, snapshots, ids and time.

With the few pure rules that read them (approval decisions, who a caller is, how deep a text
nests, which addresses are public). Nothing here does I/O or imports another duragent
package except ``duragent.errors``; every other layer may import ``core``. Metrics and logs
are ``duragent.observability``; services and background tasks are ``duragent.lifecycle``.
"""

from __future__ import annotations

from duragent.core.ids import new_message_id, new_session_id, new_ulid
from duragent.core.messages import Message, Role, ToolCall, ToolDefinition, Usage

__all__ = [
    "Message",
    "Role",
    "ToolCall",
    "ToolDefinition",
    "Usage",
    "new_message_id",
    "new_session_id",
    "new_ulid",
]
