"""Approvals: pause, survive a restart, resume on allow-once / allow-always / deny."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from duragent.core.events import EventType
from duragent.core.snapshot import SessionStatus
from duragent.errors import LLMAuthError
from duragent.testing import Reply, ToolCallReply
from duragent.turns import (
    ApprovalDecision,
    ApprovalError,
    ApprovalMismatchError,
    AwaitingApproval,
    Complete,
    NoPendingApprovalError,
)
from tests.turns.turn_fixtures import FnTool, harness

ASK = """\
apiVersion: duragent/v1alpha1
kind: Policy
mode: ask
allow:
  - "builtin:echo:safe"
"""


def echo_call(x: str, call_id: str = "c1") -> Reply:
    return Reply(tool_calls=[ToolCallReply(name="echo", arguments={"x": x}, id=call_id)])


async def test_a_call_needing_approval_pauses_the_session(tmp_path: Path) -> None:
    echo = FnTool("echo", lambda a: "ran")
    async with harness(tmp_path, tools=[echo], policy=ASK) as h:
        h.server.enqueue(echo_call("risky"))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "do it")
        info = await h.registry.info(sid)
    assert isinstance(result, AwaitingApproval)
    assert result.call_id == "c1"
    assert result.command == "echo:risky"
    assert info.status is SessionStatus.PAUSED
    assert info.pending_approval is not None
    assert info.pending_approval.call_id == "c1"
    assert echo.calls == []


async def test_allowed_calls_run_without_asking(tmp_path: Path) -> None:
    echo = FnTool("echo", lambda a: "ran")
    async with harness(tmp_path, tools=[echo], policy=ASK) as h:
        h.server.enqueue(echo_call("safe"), Reply(text="done"))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "do it")
    assert isinstance(result, Complete)
    assert result.content == "done"
    assert echo.calls == [{"x": "safe"}]


@pytest.mark.parametrize("decision", ["allow_once", "allow_always", "deny"])
async def test_an_approval_survives_a_restart_and_resumes(tmp_path: Path, decision: str) -> None:
    echo = FnTool("echo", lambda a: "ran it")
    async with harness(tmp_path, tools=[echo], policy=ASK) as h:
        h.server.enqueue(echo_call("risky"))
        sid = await h.runner.start_session("bot")
        paused = await h.runner.run(sid, "do it")
    assert isinstance(paused, AwaitingApproval)
    # a new process: new registry, new runner, same files
    async with harness(tmp_path, tools=[echo], policy=ASK) as h2:
        h2.server.enqueue(Reply(text="all done"))
        result = await h2.runner.approve(sid, "c1", decision)
        info = await h2.registry.info(sid)
        events = await h2.registry.handle(sid).events(include_archive=True)
    assert isinstance(result, Complete)
    assert result.content == "all done"
    assert info.status is SessionStatus.ACTIVE
    assert info.pending_approval is None
    tool_result = h2.server.requests[-1].json["messages"][-1]
    if decision == "deny":
        assert echo.calls == []
        assert tool_result["content"] == (
            "Command 'echo:risky' was denied by the user. Please try a different approach."
        )
    else:
        assert echo.calls == [{"x": "risky"}]
        assert tool_result["content"] == "ran it"
    decisions = [e.data["decision"] for e in events if e.type == EventType.APPROVAL_DECISION]
    assert decisions == [decision]
    local = h2.agent.directory / "policy.local.yaml"
    assert local.exists() is (decision == "allow_always")


async def test_allow_always_saves_the_pending_command_and_it_is_then_allowed(
    tmp_path: Path,
) -> None:
    echo = FnTool("echo", lambda a: "ran")
    async with harness(tmp_path, tools=[echo], policy=ASK) as h:
        h.server.enqueue(echo_call("risky"), Reply(text="first done"))
        sid = await h.runner.start_session("bot")
        await h.runner.run(sid, "do it")
        await h.runner.approve(sid, "c1", "allow_always")
        h.server.enqueue(echo_call("risky", "c2"), Reply(text="second done"))
        again = await h.runner.run(sid, "again")
    assert isinstance(again, Complete)
    assert again.content == "second done"
    assert len(echo.calls) == 2
    assert "echo:risky" in (h.agent.directory / "policy.local.yaml").read_text()


async def test_a_wrong_call_id_or_no_pending_approval_is_refused(tmp_path: Path) -> None:
    echo = FnTool("echo", lambda a: "ran")
    async with harness(tmp_path, tools=[echo], policy=ASK) as h:
        sid = await h.runner.start_session("bot")
        with pytest.raises(NoPendingApprovalError, match="no pending approval"):
            await h.runner.approve(sid, "c1", "allow_once")
        h.server.enqueue(echo_call("risky"))
        await h.runner.run(sid, "do it")
        with pytest.raises(ApprovalMismatchError, match="mismatch: expected 'c1', got 'zz'") as m:
            await h.runner.approve(sid, "zz", "allow_once")
        assert (m.value.expected, m.value.got) == ("c1", "zz")
        assert not isinstance(m.value, NoPendingApprovalError)
        with pytest.raises(ApprovalError, match="decision must be one of"):
            await h.runner.approve(sid, "c1", "maybe")


async def test_a_new_message_while_waiting_cancels_the_approval(tmp_path: Path) -> None:
    echo = FnTool("echo", lambda a: "ran")
    async with harness(tmp_path, tools=[echo], policy=ASK) as h:
        h.server.enqueue(echo_call("risky"), Reply(text="ok, forget it"))
        sid = await h.runner.start_session("bot")
        await h.runner.run(sid, "do it")
        result = await h.runner.run(sid, "never mind")
        info = await h.registry.info(sid)
    assert isinstance(result, Complete)
    assert result.content == "ok, forget it"
    assert info.pending_approval is None
    assert info.status is SessionStatus.ACTIVE
    messages: list[dict[str, Any]] = h.server.requests[-1].json["messages"]
    assert messages[-2]["content"] == "Skipped: approval cancelled: a new message arrived first"
    assert messages[-1]["content"] == "never mind"
    assert echo.calls == []
    await asyncio.sleep(0)


async def test_an_approval_given_while_the_model_is_unreachable_stays_pending(
    tmp_path: Path,
) -> None:
    echo = FnTool("echo", lambda a: "ran")
    async with harness(tmp_path, tools=[echo], policy=ASK) as h:
        h.server.enqueue(echo_call("risky"))
        sid = await h.runner.start_session("bot")
        await h.runner.run(sid, "do it")
        providers = h.providers
        working = providers.for_agent

        async def no_key(agent: Any) -> Any:
            raise LLMAuthError("OPENAI_API_KEY is not set", provider="openai")

        providers.for_agent = no_key  # type: ignore[method-assign]
        with pytest.raises(LLMAuthError):
            await h.runner.approve(sid, "c1", "allow_once")
        still = await h.registry.info(sid)
        providers.for_agent = working  # type: ignore[method-assign]
        h.server.enqueue(Reply(text="done"))
        result = await h.runner.approve(sid, "c1", "allow_once")
    assert still.pending_approval is not None
    assert still.pending_approval.call_id == "c1"
    assert echo.calls == [{"x": "risky"}]
    assert isinstance(result, Complete)
    assert result.content == "done"


async def test_an_approved_call_whose_tool_is_gone_after_a_restart_gets_a_result_saying_so(
    tmp_path: Path,
) -> None:
    echo = FnTool("echo", lambda a: "ran it")
    async with harness(tmp_path, tools=[echo], policy=ASK) as h:
        h.server.enqueue(echo_call("risky"))
        sid = await h.runner.start_session("bot")
        await h.runner.run(sid, "do it")
    async with harness(tmp_path, policy=ASK) as h2:  # the tool is no longer offered
        h2.server.enqueue(Reply(text="understood"))
        result = await h2.runner.approve(sid, "c1", ApprovalDecision.ALLOW_ONCE)
    assert isinstance(result, Complete)
    assert result.content == "understood"
    assert echo.calls == []
    tool_result = h2.server.requests[-1].json["messages"][-1]
    assert tool_result["content"] == "Tool 'echo' is no longer available."
