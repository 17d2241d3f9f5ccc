"""The local runner: the real turn runner over a temporary workspace, as the benchmarks use it."""

from __future__ import annotations

from pathlib import Path

from duragent.core.events import EventType
from duragent.testing import RecordedRequest, Reply, ScriptedLLMServer
from duragent.testing.growing_session import run_growing_session
from duragent.testing.local_runner import local_runner, request_tokens


def agent_yaml(base_url: str) -> str:
    return (
        "apiVersion: duragent/v1alpha1\nkind: Agent\nmetadata:\n  name: bench\nspec:\n"
        f"  model:\n    provider: fake\n    name: gpt-4o\n    base_url: {base_url}\n"
        "    max_input_tokens: 4096\n"
    )


def echo(request: RecordedRequest) -> Reply:
    return Reply(text=f"heard {len(request.json['messages'])} messages", prompt_tokens=1)


async def test_two_turns_are_recorded_with_their_request_sizes_and_the_workspace_goes() -> None:
    async with (
        ScriptedLLMServer(responder=echo) as server,
        local_runner(agent_yaml(server.openai_base_url), agent="bench") as local,
    ):
        root: Path = local.root
        sid = await local.runner.start_session("bench")
        await local.runner.run(sid, "first")
        await local.runner.run(sid, "second")
        events = await local.events(sid)
        assert (root / "sessions" / sid / "events.jsonl").is_file()
        limit = local.limit
    replies = [e.data["content"] for e in events if e.type == EventType.ASSISTANT_RESPONSE]
    first, second = (int(r.split()[1]) for r in replies)
    assert second == first + 2  # the first turn's message and reply came along
    sizes = request_tokens(events)
    assert len(sizes) == 2
    assert 0 < sizes[0] < sizes[1] <= limit
    assert not root.exists()  # noqa: ASYNC240


async def test_a_growing_session_runs_against_any_openai_compatible_server() -> None:
    async with ScriptedLLMServer(responder=echo) as server:
        run = await run_growing_session(server.openai_base_url, turns=3, window=2048)
    assert run.completed == 3
    assert len(run.request_tokens) == 3
    assert run.over_limit == 0
