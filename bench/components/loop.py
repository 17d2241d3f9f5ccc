"""Agentic-loop overhead per iteration, excluding model and tool time.

A turn of N iterations against an instant in-process model (it answers a tool call until
the N-th response, then text) and an instant tool. Everything else is real: the session
actor persisting every event, the request fitted to the window before every call, Layer 3
masking, token counting. Prints the mean cost per iteration at 10 and 100 iterations (target:
≤ 2 ms at 100, and no quadratic growth: the ratio 100/10 stays near 1).

Long sessions: the same 10-iteration turn in a session whose history already holds 1, 100,
1,000 or 2,000 messages (seeded with plain turns first). A chat that has gone on for months
must not make each iteration dearer: the cost per iteration stays flat in the history's length
(target: 1,000 messages ≤ 1.2 × 1 message).

    .venv/bin/python -m bench.components.loop
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from duragent.agents import load_catalog
from duragent.core.messages import ToolCall, ToolDefinition, Usage
from duragent.llm import ChatRequest, ChatResponse, ResponseDone, StreamEvent
from duragent.session import RegistrySettings, SessionRegistry
from duragent.store import SessionStore
from duragent.tools.base import PolicyType, ToolContext, ToolOutcome
from duragent.turns import TurnRunner
from duragent.turns.providers import ProviderPool

AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: bench
spec:
  model:
    provider: offline
    name: gpt-4o
    max_input_tokens: 128000
  session:
    max_tool_iterations: 1000
"""


class InstantModel:
    """Answers with one tool call per response until ``iterations`` calls were made."""

    name = "instant"
    model = "gpt-4o"

    def __init__(self, iterations: int) -> None:
        self.iterations = iterations
        self.calls = 0
        self.chatting = False  # while seeding a history: plain answers, no tool calls

    def _respond(self, request: ChatRequest) -> ChatResponse:
        usage = Usage(prompt_tokens=10, completion_tokens=5)
        if self.chatting:
            return ChatResponse(content="answer " * 20, usage=usage)
        self.calls += 1
        if self.calls > self.iterations:
            return ChatResponse(content="done", usage=usage)
        call = ToolCall(id=f"c{self.calls}", name="noop", arguments=f'{{"i": {self.calls}}}')
        return ChatResponse(content="", tool_calls=(call,), usage=usage)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        return self._respond(request)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        yield ResponseDone(self._respond(request))

    async def aclose(self) -> None:
        return None


class Noop:
    name = "noop"
    policy_type: PolicyType = "builtin"

    def definition(self) -> ToolDefinition:
        return ToolDefinition(name="noop", description="does nothing, instantly")

    def invocation(self, args: Mapping[str, Any]) -> str:
        return "noop"

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        return ToolOutcome(True, f"result {args.get('i')}: " + "lorem ipsum " * 30)


class FixedPool(ProviderPool):
    def __init__(self, model: InstantModel) -> None:
        super().__init__()
        self.instant = model

    async def for_agent(self, agent: Any) -> Any:
        return self.instant


async def turn_time(root: Path, iterations: int, history: int = 1, turns: int = 1) -> float:
    """Mean seconds of ``turns`` turns of ``iterations`` tool calls, after ``history`` messages.

    Several turns in a row, so the session's periodic work (a snapshot of its window every
    few dozen events, the log rolled over) is counted at the rate a long chat pays it, not
    according to whether the one measured turn happens to fall on it.
    """
    agent_dir = root / "agents" / "bench"
    agent_dir.mkdir(parents=True, exist_ok=True)
    (agent_dir / "agent.yaml").write_text(AGENT)
    catalog = load_catalog(root / "agents")
    registry = SessionRegistry(SessionStore(root / f"sessions-{iterations}"), RegistrySettings())
    await registry.open()
    model = InstantModel(iterations)
    runner = TurnRunner(
        registry,
        agents=lambda: catalog,
        providers=FixedPool(model),
        workspace_dir=root,
        world_memory_dir=root / "world",
        policy_file=root / "policy.yaml",
        extra_tools=lambda agent, sid: [Noop()],
    )
    sid = await runner.start_session("bench")
    model.chatting = True
    for i in range((history - 1) // 2):  # the measured turn's message is the history-th
        await runner.run(sid, f"question {i} " + "words " * 20)
    elapsed = 0.0
    for _ in range(turns):
        model.chatting = False
        model.calls = 0
        start = time.perf_counter()
        result = await runner.run(sid, "go")
        elapsed += time.perf_counter() - start
        assert result.content == "done", result
    await registry.aclose()
    return elapsed / turns


async def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        root = Path(tmp)
        await turn_time(root / "warm", 5)  # imports, tokenizer load
        for n in (10, 100):
            per = [await turn_time(root / f"r{n}-{i}", n) / n for i in range(5)]
            rows.append((n, statistics.median(per)))
    print(f"{'iterations':>10}  {'per iteration':>14}  {'target':>8}")
    print("-" * 38)
    for n, each in rows:
        target = "<= 2 ms" if n == 100 else ""
        print(f"{n:>10}  {each * 1e3:>11.2f} ms  {target:>8}")
    print(f"ratio 100/10 per-iteration cost: {rows[1][1] / rows[0][1]:.2f} (1.0 = linear)")
    await long_sessions()


async def long_sessions() -> None:
    """The 10-iteration turn after 1 to 2,000 messages of history; the ratio to 1 message."""
    sizes = (1, 100, 1000, 2000)
    per: dict[int, list[float]] = {size: [] for size in sizes}
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        for run in range(5):  # sizes interleaved: a slow moment of the machine hits all alike
            for size in sizes:
                root = Path(tmp) / f"h{size}-{run}"
                per[size].append(await turn_time(root, 10, history=size, turns=8) / 10)
    base = statistics.median(per[1])
    print()
    print(f"{'history':>10}  {'per iteration':>14}  {'vs 1 message':>12}  {'target':>8}")
    print("-" * 52)
    for size in sizes:
        each = statistics.median(per[size])
        target = "<= 1.2x" if size == 1000 else ""
        print(f"{size:>10,}  {each * 1e3:>11.2f} ms  {each / base:>11.2f}x  {target:>8}")


if __name__ == "__main__":
    asyncio.run(main())
