"""The conversation as the API shows it, rebuilt from the persisted events.

Reads the full history (archive + live log), so messages that left the in-memory window are
still available. Tool calls and results are included only on request. Where a summary
replaced messages in the model's window, a ``summary`` marker appears (round, the summary,
``through_seq``): the messages before it are still listed, the model no longer sees them.
A message's ``attachments`` are listed as recorded: a user's files, and those the agent sent
with a reply (``send_file``, with their ``caption``), so a front end shows both alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from duragent.core.events import Event
from duragent.core.payloads import (
    AssistantResponseData,
    EventType,
    SteeringData,
    SummaryData,
    ToolCallRecord,
    ToolResultData,
    ToolsSkippedData,
    UserMessageData,
)
from duragent.tools.send_file import ReplyFile

__all__ = ["events_to_messages"]


def events_to_messages(events: Sequence[Event], *, include_tools: bool) -> list[dict[str, Any]]:
    """User and assistant messages (and tool traffic and hook steering when asked), in order."""
    out: list[dict[str, Any]] = []
    for e in events:
        if e.type == EventType.USER_MESSAGE:
            message = UserMessageData.of(e.data)
            item: dict[str, Any] = {
                "role": "user",
                "content": message.content,
                "seq": e.seq,
                "timestamp": e.timestamp,
            }
            if message.sender_id:
                item["sender_id"] = message.sender_id
            if message.sender_name:
                item["sender_name"] = message.sender_name
            if message.attachments:  # as the event records them (kind, mime, size, hash, …)
                item["attachments"] = [a.to_data() for a in message.attachments]
            out.append(item)
        elif e.type in (EventType.ASSISTANT_RESPONSE, EventType.ASSISTANT_MESSAGE):
            response = AssistantResponseData.of(e.data)
            calls = [ToolCallRecord.of(c) for c in response.tool_calls]
            if calls and not include_tools:
                continue
            item = {
                "role": "assistant",
                "content": response.content,
                "seq": e.seq,
                "timestamp": e.timestamp,
            }
            if response.message_id:
                item["message_id"] = response.message_id
            files = ReplyFile.files_of(response.attachments) if response.attachments else ()
            if files:  # what the reply carried (``send_file``), as recorded
                item["attachments"] = [f.to_data() for f in files]
            if calls:
                item["tool_calls"] = [
                    {"call_id": c.call_id, "name": c.tool_name, "arguments": c.arguments}
                    for c in calls
                ]
            out.append(item)
        elif e.type == EventType.SUMMARY:
            summary = SummaryData.of(e.data)
            out.append(
                {
                    "role": "summary",
                    "content": summary.summary,
                    "round": summary.round,
                    "through_seq": summary.through_seq,
                    "messages": summary.messages,
                    "seq": e.seq,
                    "timestamp": e.timestamp,
                }
            )
        elif include_tools and e.type == EventType.TOOL_RESULT:
            result = ToolResultData.of(e.data)
            out.append(
                {
                    "role": "tool",
                    "call_id": result.call_id,
                    "success": bool(result.success),
                    "content": result.content,
                    "seq": e.seq,
                    "timestamp": e.timestamp,
                }
            )
        elif include_tools and e.type == EventType.STEERING:
            # the reference's ``steering`` role: a hook's text the model read after a tool
            out.append(
                {
                    "role": "steering",
                    "content": SteeringData.of(e.data).content,
                    "seq": e.seq,
                    "timestamp": e.timestamp,
                }
            )
        elif include_tools and e.type == EventType.TOOLS_SKIPPED:
            skipped = ToolsSkippedData.of(e.data)
            out.extend(
                {
                    "role": "tool",
                    "call_id": call_id,
                    "success": False,
                    "content": f"Skipped: {skipped.reason}",
                    "seq": e.seq,
                    "timestamp": e.timestamp,
                }
                for call_id in skipped.call_ids
            )
    return out
