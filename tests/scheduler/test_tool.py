"""The ``schedule`` tool: the reference's arguments, checks and texts, own schedules only."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from duragent.agents import load_catalog
from duragent.core.caller import OPERATOR, Caller, ChatRef
from duragent.scheduler import Destination, ManualClock, Schedules, ScheduleTool, declared_id
from duragent.scheduler.model import Every, MessagePayload
from duragent.tools.base import ToolContext
from tests.scheduler.rig import START, RecordingPayloads

CHAT = Destination("telegram", "42")


@pytest.fixture
def tool(tmp_path: Path, write_agent: Callable[..., Path]) -> ScheduleTool:
    write_agent("helper")
    write_agent("other")
    catalog = load_catalog(tmp_path / ".duragent" / "agents")
    schedules = Schedules(
        tmp_path / "schedules",
        agents=lambda: catalog,
        payloads=RecordingPayloads(),
        clock=ManualClock(START),
    )

    async def chat_of(session_id: str) -> Destination | None:
        return CHAT if session_id == "chat-session" else None

    return ScheduleTool(schedules, chat_of)


def ctx(tmp_path: Path, agent: str = "helper", session: str = "chat-session") -> ToolContext:
    return ToolContext(
        caller=OPERATOR,
session_id=session, agent_name=agent, agent_dir=tmp_path,
        workspace_dir=tmp_path, world_memory_dir=tmp_path,
    )  # fmt: skip


async def call(tool: ScheduleTool, tmp_path: Path, **args: Any) -> tuple[bool, str]:
    outcome = await tool.run(args, ctx(tmp_path))
    return outcome.success, outcome.content


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ({"message": "hi"}, "Error: Must specify one of at, every_seconds, or cron"),
        ({"every_seconds": 60, "cron": "0 9 * * *", "message": "hi"},
         "Error: Can only specify one of at, every_seconds, or cron"),
        ({"every_seconds": 60}, "Error: Must specify one of message or task"),
        ({"every_seconds": 60, "message": "a", "task": "b"},
         "Error: Can only specify one of message or task"),
        ({"every_seconds": 0, "message": "hi"}, "Error: every_seconds must be >= 1"),
        ({"at": "2025-01-01T00:00:00Z", "message": "hi"}, "must be in the future"),
        ({"cron": "0 9 * *", "message": "hi"}, "Error: expr: is not a valid cron expression"),
        ({"cron": "0 9 * * *", "tz": "Nowhere/Else", "message": "hi"}, "IANA"),
    ],
)  # fmt: skip
async def test_create_refuses_what_the_reference_refuses(
    tool: ScheduleTool, tmp_path: Path, args: dict[str, Any], text: str
) -> None:
    ok, content = await call(tool, tmp_path, action="create", **args)
    assert not ok
    assert text in content


async def test_create_without_a_chat_has_no_gateway_context(
    tool: ScheduleTool, tmp_path: Path
) -> None:
    outcome = await tool.run(
        {"action": "create", "every_seconds": 60, "message": "hi"}, ctx(tmp_path, session="http")
    )
    assert outcome.content.startswith("Error: No gateway context")


async def test_created_schedules_are_listed_for_their_agent_only_and_cancelled(
    tool: ScheduleTool, tmp_path: Path
) -> None:
    ok, made = await call(tool, tmp_path, action="create", cron="0 9 * * 1-5",
                          tz="Europe/Berlin", task="Post the agenda")  # fmt: skip
    assert ok
    assert made.startswith("Created recurring schedule: sched_")
    sched_id = made.rsplit(" ", 1)[1]
    _, one_shot = await call(tool, tmp_path, action="create", at="2026-02-01T09:00:00Z",
                             message="Renew the domain", max_retries=2)  # fmt: skip
    assert one_shot.startswith("Created one-shot schedule: ")
    _, listed = await call(tool, tmp_path, action="list")
    assert listed.startswith("Active schedules:\n")
    rows = json.loads(listed.split("\n", 1)[1])
    assert rows[0]["timing"] == "cron: 0 9 * * 1-5 (Europe/Berlin)"
    assert {r["payload_type"] for r in rows} == {"task", "message"}
    others = await tool.run({"action": "list"}, ctx(tmp_path, agent="other"))
    assert others.content == "No active schedules."
    refused = await tool.run({"action": "cancel", "schedule_id": sched_id}, ctx(tmp_path, "other"))
    assert not refused.success
    assert "not found" in refused.content
    ok, cancelled = await call(tool, tmp_path, action="cancel", schedule_id=sched_id)
    assert (ok, cancelled) == (True, f"Cancelled schedule: {sched_id}")


def test_its_policy_invocation_is_name_and_action(tool: ScheduleTool) -> None:
    assert tool.invocation({"action": "create"}) == "schedule:create"


# --- scope: a chat sees and cancels only its own schedules (issue 33) ------------------------

ALICE_CHAT = Destination("telegram", "100")
BOB_CHAT = Destination("telegram", "200")
ALICE = Caller(role="member", chat=ChatRef("telegram", "100"), sender_id="100")
BOB = Caller(role="member", chat=ChatRef("telegram", "200"), sender_id="200")
AGENT_WIDE_OWNER = Caller(
    role="owner", chat=ChatRef("telegram", "200"), sender_id="200", agent_wide=True
)
DECLARES_FOR_ALICE = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: helper
spec:
  model:
    provider: offline
    name: duragent-offline
  schedules:
    - name: alice-digest
      schedule: {cron: {expr: "0 9 * * *"}}
      payload: {message: {message: "Your digest"}}
      destination: {gateway: telegram, chat_id: "100"}
    - name: operator-report
      schedule: {cron: {expr: "0 8 * * *"}}
      payload: {task: {task: "Write the report"}}
"""


@pytest.fixture
async def two_chats(
    tmp_path: Path, write_agent: Callable[..., Path]
) -> AsyncIterator[tuple[ScheduleTool, Schedules]]:
    write_agent("helper", DECLARES_FOR_ALICE)
    catalog = load_catalog(tmp_path / ".duragent" / "agents")
    schedules = Schedules(
        tmp_path / "schedules",
        agents=lambda: catalog,
        payloads=RecordingPayloads(),
        clock=ManualClock(START),
    )
    chats = {"alice-session": ALICE_CHAT, "bob-session": BOB_CHAT}

    async def chat_of(session_id: str) -> Destination | None:
        return chats.get(session_id)

    await schedules.start()
    try:
        yield ScheduleTool(schedules, chat_of), schedules
    finally:
        await schedules.stop()


def as_(caller: Caller, tmp_path: Path, session: str) -> ToolContext:
    return ToolContext(
        caller=caller, session_id=session, agent_name="helper", agent_dir=tmp_path,
        workspace_dir=tmp_path, world_memory_dir=tmp_path,
    )  # fmt: skip


async def test_another_chat_can_neither_list_nor_cancel_a_chats_schedule(
    two_chats: tuple[ScheduleTool, Schedules], tmp_path: Path
) -> None:
    tool, schedules = two_chats
    alice, bob = as_(ALICE, tmp_path, "alice-session"), as_(BOB, tmp_path, "bob-session")
    made = await tool.run({"action": "create", "every_seconds": 3600, "message": "pills"}, alice)
    sched_id = made.content.rsplit(" ", 1)[1]
    listed = await tool.run({"action": "list"}, bob)
    cancel = await tool.run({"action": "cancel", "schedule_id": sched_id}, bob)
    missing = await tool.run({"action": "cancel", "schedule_id": "sched_nothing"}, bob)
    assert listed.content == "No active schedules."
    assert (cancel.success, cancel.content) == (False, f"Error: schedule '{sched_id}' not found")
    assert missing.content == "Error: schedule 'sched_nothing' not found"
    assert schedules.get(sched_id).status == "active"
    own = await tool.run({"action": "list"}, alice)
    assert sched_id in own.content


async def test_a_chat_sees_a_declared_schedule_only_when_it_delivers_there_and_no_path(
    two_chats: tuple[ScheduleTool, Schedules], tmp_path: Path
) -> None:
    tool, _ = two_chats
    alice, bob = as_(ALICE, tmp_path, "alice-session"), as_(BOB, tmp_path, "bob-session")
    alices = await tool.run({"action": "list"}, alice)
    bobs = await tool.run({"action": "list"}, bob)
    digest, report = declared_id("helper", "alice-digest"), declared_id("helper", "operator-report")
    refused = await tool.run({"action": "cancel", "schedule_id": digest}, alice)
    hidden = await tool.run({"action": "cancel", "schedule_id": report}, alice)
    assert [r["id"] for r in json.loads(alices.content.split("\n", 1)[1])] == [digest]
    assert bobs.content == "No active schedules."
    assert (refused.success, refused.content) == (
        False,
        f"Error: schedule '{digest}' is declared in the agent.yaml of agent 'helper': its "
        "operator can remove it from spec.schedules there",
    )
    assert hidden.content == f"Error: schedule '{report}' not found"
    for outcome in (alices, refused, hidden):
        assert str(tmp_path) not in outcome.content


async def test_a_chat_cannot_cancel_what_the_operator_made_for_it(
    two_chats: tuple[ScheduleTool, Schedules], tmp_path: Path
) -> None:
    """Found in review: a schedule made over HTTP for a chat was cancellable by any member."""
    tool, schedules = two_chats
    made = await schedules.add_async(
        schedules.new(
            agent="helper",
            timing=Every(3600, START),
            payload=MessagePayload("standup"),
            destination=ALICE_CHAT,
        )
    )
    refused = await tool.run(
        {"action": "cancel", "schedule_id": made.id}, as_(ALICE, tmp_path, "alice-session")
    )
    assert (refused.success, refused.content) == (
        False,
        f"Error: schedule '{made.id}' was made by the operator of agent 'helper': only they "
        "can cancel it (duragent schedule cancel)",
    )
    assert schedules.get(made.id).status == "active"
    operator = await tool.run(
        {"action": "cancel", "schedule_id": made.id}, as_(OPERATOR, tmp_path, "http")
    )
    assert operator.success


@pytest.mark.parametrize("caller", [OPERATOR, AGENT_WIDE_OWNER], ids=["operator", "owner"])
async def test_the_operator_and_an_agent_wide_owner_list_and_cancel_every_chats_schedules(
    caller: Caller, two_chats: tuple[ScheduleTool, Schedules], tmp_path: Path
) -> None:
    tool, schedules = two_chats
    alice = as_(ALICE, tmp_path, "alice-session")
    made = await tool.run({"action": "create", "every_seconds": 3600, "message": "pills"}, alice)
    sched_id = made.content.rsplit(" ", 1)[1]
    wide = as_(caller, tmp_path, "bob-session")
    listed = await tool.run({"action": "list"}, wide)
    refused = await tool.run(
        {"action": "cancel", "schedule_id": declared_id("helper", "operator-report")}, wide
    )
    cancelled = await tool.run({"action": "cancel", "schedule_id": sched_id}, wide)
    rows = json.loads(listed.content.split("\n", 1)[1])
    assert {r["id"] for r in rows} == {
        sched_id,
        declared_id("helper", "alice-digest"),
        declared_id("helper", "operator-report"),
    }
    assert cancelled.content == f"Cancelled schedule: {sched_id}"
    assert schedules.get(sched_id).status == "cancelled"
    assert "spec.schedules" in refused.content
    assert str(tmp_path) not in refused.content


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({"every_seconds": 10**20}, "every_seconds: is out of range (got 100000000000000000000; "
         "allowed: 1 to 315,360,000 seconds (3,650 days))"),
        ({"every_seconds": 10**12}, "allowed: 1 to 315,360,000 seconds"),
        ({"at": "0001-01-01T00:00:00+05:00"},
         "from 1970-01-01T00:00:00Z to before 9000-01-01T00:00:00Z"),
        ({"at": "9500-01-01T00:00:00Z"}, "at: is out of range (got '9500-01-01T00:00:00+00:00'"),
        ({"every_seconds": 60, "max_delay_ms": 10**20}, "max_delay_ms must be a whole number"),
    ],
)  # fmt: skip
async def test_a_timing_out_of_range_is_a_tool_error_naming_the_range_and_nothing_is_written(
    tool: ScheduleTool, tmp_path: Path, args: dict[str, Any], words: str
) -> None:
    ok, content = await call(tool, tmp_path, action="create", message="hi", **args)
    assert not ok
    assert words in content
    assert not (tmp_path / "schedules").exists()
    _, listed = await call(tool, tmp_path, action="list")
    assert listed == "No active schedules."
