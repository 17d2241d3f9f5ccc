"""Plain data shared by every layer: messages, tool calls, usage and ids.

Also the lifecycle every service shares (``core.lifecycle``: the ``Service`` protocol and the
stack that starts and stops them; ``core.tasks``: the one owner of background tasks), here
because front ends use them and may not import the runtime. Nothing here does I/O or imports
another duragent package except ``duragent.errors``; every other layer may import ``core``.
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
