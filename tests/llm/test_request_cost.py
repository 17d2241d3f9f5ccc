"""A model call's cost does not grow with the history the way the SDK's transform made it.

Ratios within one run (no absolute times): the same provider streams an answer for a 10- and a
2,000-message history from the real fake server over HTTP. Through ``chat.completions.create``
the 2,000-message call cost ~60x the short one (the SDK's typed transform, ~0.2-0.5 ms per
message); with pre-built bodies it is a few times (the fake server parsing 2,000 messages
in the same process dominates what is left).
"""

from __future__ import annotations

import time

from duragent.core.messages import Message, ToolCall
from duragent.llm.base import LLMProvider
from duragent.llm.types import ChatRequest
from duragent.testing import ScriptedLLMServer
from duragent.testing.script import Reply
from tests.llm.helpers import collect

_MAX_RATIO = 10.0


def history(size: int) -> list[Message]:
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


async def _best_call(provider: LLMProvider, server: ScriptedLLMServer, size: int) -> float:
    request = ChatRequest(messages=history(size))
    best = float("inf")
    for _ in range(4):
        server.enqueue(Reply(text="ok"))
        started = time.perf_counter()
        await collect(provider.stream(request))
        best = min(best, time.perf_counter() - started)
    return best


async def test_an_openai_call_with_2000_messages_costs_a_few_short_calls_not_sixty(
    server: ScriptedLLMServer, openai_provider: LLMProvider
) -> None:
    short = await _best_call(openai_provider, server, 10)
    long = await _best_call(openai_provider, server, 2000)
    assert long <= _MAX_RATIO * short, (long, short)


async def test_an_anthropic_call_with_2000_messages_costs_a_few_short_calls(
    server: ScriptedLLMServer, anthropic_provider: LLMProvider
) -> None:
    short = await _best_call(anthropic_provider, server, 10)
    long = await _best_call(anthropic_provider, server, 2000)
    assert long <= _MAX_RATIO * short, (long, short)
