"""A scripted model for the summaries tier: the agent's replies and the summariser's.

The summariser is scripted too (the brief: no mocks, the real provider over HTTP): its
requests are recognised by the summariser's system prompt, and its answer is computed from
the request — a faithful summariser that keeps every line of its input naming the task or
a secret, so tests can follow what a summary carries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from duragent.testing import Fault, RecordedRequest, Reply, ScriptItem, ToolCallReply

SUMMARY_MARK = "You maintain the running summary"


def is_summary_request(request: RecordedRequest) -> bool:
    messages = request.json.get("messages") or []
    return bool(messages) and str(messages[0].get("content", "")).startswith(SUMMARY_MARK)


def contents(request: RecordedRequest) -> str:
    """Every message text of a request, joined (what the model read)."""
    return "\n".join(str(m.get("content") or "") for m in request.json.get("messages") or [])


def faithful_summary(request: RecordedRequest) -> str:
    body = str((request.json["messages"][-1]).get("content", ""))
    keep = [
        line.strip()
        for line in body.splitlines()
        if any(w in line.lower() for w in ("secret", "task", "instruction"))
    ]
    kept = "\n".join(f"- {line[:200]}" for line in dict.fromkeys(keep))
    return f"## Goal\n- continue the work\n## Key facts and identifiers\n{kept or '- none'}"


def responder(
    *,
    agent: Callable[[RecordedRequest], ScriptItem] | None = None,
    summariser: Callable[[RecordedRequest], ScriptItem] | None = None,
) -> Callable[[RecordedRequest], Any]:
    """Route summariser requests and agent requests to their own scripts."""

    def respond(request: RecordedRequest) -> ScriptItem:
        if is_summary_request(request):
            return summariser(request) if summariser else Reply(text=faithful_summary(request))
        return agent(request) if agent else Reply(text="ok")

    return respond


def tool_every(n: int, name: str = "probe") -> Callable[[RecordedRequest], ScriptItem]:
    """An agent that calls ``name`` on every ``n``-th request after a user message."""
    count = 0

    def agent(request: RecordedRequest) -> ScriptItem:
        nonlocal count
        last = (request.json.get("messages") or [{}])[-1]
        if last.get("role") == "tool":
            return Reply(text="done")
        count += 1
        if count % n == 0:
            return Reply(tool_calls=[ToolCallReply(name=name, arguments={"x": str(count)})])
        return Reply(text=f"reply {count}")

    return agent


__all__ = [
    "SUMMARY_MARK",
    "Fault",
    "contents",
    "faithful_summary",
    "is_summary_request",
    "responder",
    "tool_every",
]
