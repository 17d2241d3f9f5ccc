"""Long conversations for tests and benchmarks that measure cost against history length."""

from __future__ import annotations

from duragent.core.messages import Message, ToolCall

__all__ = ["long_history"]


def long_history(size: int) -> list[Message]:
    """A system prompt then ``size - 1`` messages cycling user, tool call, result, answer."""
    out = [Message.system("You are helpful.")]
    for i in range(size - 1):
        kind = i % 4
        if kind == 0:
            out.append(Message.user(f"question {i} " + "words " * 20))
        elif kind == 1:
            call = ToolCall(id=f"c{i}", name="read", arguments='{"path": "a.txt"}')
            out.append(Message.assistant(None, (call,)))
        elif kind == 2:
            out.append(Message.tool(f"c{i - 1}", "result " * 30))
        else:
            out.append(Message.assistant("answer " * 20))
    return out
