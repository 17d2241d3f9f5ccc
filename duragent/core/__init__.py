"""Plain data shared by every layer: messages, tool calls, usage and ids.

Nothing here does I/O or imports another duragent package except ``duragent.errors``; every
other layer may import ``core``.
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
