"""A background job's outcome reaches the session that spawned it, and the agent answers there.

Real turn runner, real session store, the scripted model over HTTP, real child processes;
the chat is the kit's in-memory ``OutboundPort``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from duragent.core.messages import Role
from duragent.frontkit import ChatRef, MemoryOutbound, ProcessNotices, SessionNotices
from duragent.testing import Reply, ToolCallReply
from duragent.tools.processes import (
    BackgroundProcessTool,
    ProcessMeta,
    ProcessRegistry,
    SpawnRequest,
    Tmux,
)
from duragent.tools.processes.meta import load_all
from duragent.turns import AwaitingApproval, Complete
from tests.polling import eventually
from tests.turns.turn_fixtures import FnTool, Harness, harness

COMPLETED = "[Background Process Completed]"


def spawn(command: str, call_id: str = "c1") -> Reply:
    args = {"action": "spawn", "command": command, "label": "build"}
    return Reply(tool_calls=[ToolCallReply(name="background_process", arguments=args, id=call_id)])


@asynccontextmanager
async def rig(tmp_path: Path, *tools: Any) -> AsyncIterator[tuple[Harness, MemoryOutbound]]:
    port = MemoryOutbound()
    registry = ProcessRegistry(tmp_path / ".duragent" / "processes", tmux=Tmux("unused"))
    async with harness(tmp_path, tools=[BackgroundProcessTool(registry), *tools]) as h:
        notices = SessionNotices(h.runner, lambda gateway: port if gateway == "fake" else None)
        registry.events = ProcessNotices(notices)
        await registry.start()
        try:
            yield h, port
        finally:
            await registry.stop()


async def user_texts(h: Harness, session_id: str) -> list[str]:
    return [m.text for m in await h.registry.handle(session_id).messages() if m.role is Role.USER]


async def test_a_finished_job_makes_its_idle_chat_session_answer_and_the_reply_reaches_the_chat(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path) as (h, port):
        gate = tmp_path / "go"
        h.server.enqueue(
            spawn(f"until [ -e {gate} ]; do sleep 0.02; done; echo built ok"),
            Reply(text="Started the build."),
            Reply(text="The build finished: built ok."),
        )
        sid = await h.runner.session_for_chat("fake", "c1", "bot")
        first = await h.runner.run(sid, "build it")
        assert isinstance(first, Complete)
        assert first.content == "Started the build."
        gate.touch()
        assert await eventually(lambda: port.texts() == ["The build finished: built ok."])
        texts = await user_texts(h, sid)
        prompt = h.server.requests[-1].body["messages"][-1]["content"]
    assert texts[0] == "build it"
    assert texts[1].startswith(COMPLETED)
    assert "Label: build" in texts[1]
    assert "built ok" in texts[1]
    assert port.actions[-1].chat == ChatRef("fake", "c1")
    assert prompt.startswith(COMPLETED)  # the model answered the notice itself


async def test_a_job_ending_during_a_turn_is_steered_into_it_and_runs_no_turn_of_its_own(
    tmp_path: Path,
) -> None:
    seen: list[str] = []
    gate = tmp_path / "go"

    async def until_told(_: Any) -> str:
        gate.touch()  # the job ends only now, while this call runs

        async def recorded() -> bool:
            texts = await user_texts(h, sid)
            return any(t.startswith(COMPLETED) for t in texts)

        assert await eventually(recorded)
        seen.append("told")
        return "waited"

    waiter = FnTool("wait_for_job", until_told)
    async with rig(tmp_path, waiter) as (h, port):
        h.server.enqueue(
            spawn(f"until [ -e {gate} ]; do sleep 0.02; done; echo quick"),
            Reply(tool_calls=[ToolCallReply(name="wait_for_job", arguments={}, id="c2")]),
            Reply(text="Both done."),
        )
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "go")
        assert await eventually(lambda: all(m.notified for m in _metas(tmp_path)))
        texts = await user_texts(h, sid)
        last_request = h.server.requests[-1].body["messages"]
    assert isinstance(result, Complete)
    assert result.content == "Both done."
    assert seen == ["told"]
    assert len(h.server.requests) == 3  # no extra turn for the notice
    assert sum(t.startswith(COMPLETED) for t in texts) == 1
    assert any(
        m["role"] == "user" and str(m.get("content", "")).startswith(COMPLETED)
        for m in last_request
    )
    assert port.actions == []


def _metas(root: Path) -> list[ProcessMeta]:
    return load_all(root / ".duragent" / "processes")


async def test_a_notice_reported_twice_is_recorded_and_answered_once(tmp_path: Path) -> None:
    async with rig(tmp_path) as (h, _port):
        notices = SessionNotices(h.runner, lambda gateway: None)
        h.server.enqueue(Reply(text="Noted."))
        sid = await h.runner.start_session("bot")
        first = await notices.notify(sid, f"{COMPLETED}\n\nHandle: x", notice_id="process:x:ended")
        again = await notices.notify(sid, f"{COMPLETED}\n\nHandle: x", notice_id="process:x:ended")
        texts = await user_texts(h, sid)
    assert isinstance(first, Complete)
    assert first.content == "Noted."
    assert again is None
    assert len(texts) == 1
    assert len(h.server.requests) == 1


async def test_a_job_whose_session_is_gone_counts_as_reported(tmp_path: Path) -> None:
    async with rig(tmp_path) as (h, _port):
        sid = await h.runner.start_session("bot")
        registry = ProcessRegistry(
            tmp_path / "other", events=ProcessNotices(SessionNotices(h.runner, lambda g: None))
        )
        await registry.start()
        await h.registry.delete(sid)
        meta = await registry.spawn(
            SpawnRequest(command="true", cwd=tmp_path, session_id=sid, agent="bot")
        )
        reported = await eventually(lambda: registry.get(meta.handle).notified)  # type: ignore[union-attr]
        await registry.stop()
    assert reported
    assert h.server.requests == []


ASK = """\
apiVersion: duragent/v1alpha1
kind: Policy
mode: ask
"""


async def test_a_notice_waits_for_a_pending_approval_and_is_answered_after_it(
    tmp_path: Path,
) -> None:
    echo = FnTool("echo", lambda args: "echoed")
    async with harness(tmp_path, tools=[echo], policy=ASK) as h:
        h.server.enqueue(Reply(tool_calls=[ToolCallReply(name="echo", arguments={}, id="c1")]))
        sid = await h.runner.start_session("bot")
        paused = await h.runner.run(sid, "echo please")
        assert isinstance(paused, AwaitingApproval)
        notices = SessionNotices(h.runner, lambda gateway: None)
        told = asyncio.create_task(
            notices.notify(sid, f"{COMPLETED}\n\nHandle: y", notice_id="process:y:ended")
        )
        await asyncio.sleep(0.2)
        assert not told.done()
        assert not any(t.startswith(COMPLETED) for t in await user_texts(h, sid))
        h.server.enqueue(Reply(text="Echo done."), Reply(text="And the job ended."))
        await h.runner.approve(sid, "c1", "allow_once")
        result = await asyncio.wait_for(told, 60)
        texts = await user_texts(h, sid)
    assert isinstance(result, Complete)
    assert result.content == "And the job ended."
    assert echo.calls == [{}]
    assert texts == ["echo please", f"{COMPLETED}\n\nHandle: y"]
