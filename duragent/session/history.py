"""The conversation as the API shows it, rebuilt from the persisted events.

Reads the full history (archive + live log), so messages that left the in-memory window are
still available. Tool calls and results are included only on request. Where a summary
replaced messages in the model's window, a ``summary`` marker appears (round, the summary,
``through_seq``): the messages before it are still listed, the model no longer sees them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from duragent.core.events import Event, EventType

__all__ = ["events_to_messages"]


def events_to_messages(events: Sequence[Event], *, include_tools: bool) -> list[dict[str, Any]]:
    """User and assistant messages (and tool traffic and hook steering when asked), in order."""
    out: list[dict[str, Any]] = []
    for e in events:
        d = e.data
        if e.type == EventType.USER_MESSAGE:
            item: dict[str, Any] = {
                "role": "user",
                "content": d.get("content", ""),
                "seq": e.seq,
                "timestamp": e.timestamp,
            }
            if d.get("sender_id"):
                item["sender_id"] = d["sender_id"]
            if d.get("sender_name"):
                item["sender_name"] = d["sender_name"]
            out.append(item)
        elif e.type in (EventType.ASSISTANT_RESPONSE, EventType.ASSISTANT_MESSAGE):
            calls = d.get("tool_calls") or []
            if calls and not include_tools:
                continue
            item = {
                "role": "assistant",
                "content": d.get("content", ""),
                "seq": e.seq,
                "timestamp": e.timestamp,
            }
            if d.get("message_id"):
                item["message_id"] = d["message_id"]
            if calls:
                item["tool_calls"] = [
                    {
                        "call_id": c.get("call_id"),
                        "name": c.get("tool_name"),
                        "arguments": c.get("arguments"),
                    }
                    for c in calls
                ]
            out.append(item)
        elif e.type == EventType.SUMMARY:
            out.append(
                {
                    "role": "summary",
                    "content": d.get("summary", ""),
                    "round": d.get("round", 0),
                    "through_seq": d.get("through_seq", 0),
                    "messages": d.get("messages", 0),
                    "seq": e.seq,
                    "timestamp": e.timestamp,
                }
            )
        elif include_tools and e.type == EventType.TOOL_RESULT:
            result = d.get("result") or {}
            out.append(
                {
                    "role": "tool",
                    "call_id": d.get("call_id"),
                    "success": bool(result.get("success", False)),
                    "content": result.get("content", ""),
                    "seq": e.seq,
                    "timestamp": e.timestamp,
                }
            )
        elif include_tools and e.type == EventType.STEERING:
            # the reference's ``steering`` role: a hook's text the model read after a tool
            out.append(
                {
                    "role": "steering",
                    "content": d.get("content", ""),
                    "seq": e.seq,
                    "timestamp": e.timestamp,
                }
            )
        elif include_tools and e.type == EventType.TOOLS_SKIPPED:
            out.extend(
                {
                    "role": "tool",
                    "call_id": call_id,
                    "success": False,
                    "content": f"Skipped: {d.get('reason', '')}",
                    "seq": e.seq,
                    "timestamp": e.timestamp,
                }
                for call_id in d.get("call_ids") or []
            )
    return out
