"""The ``schedule`` tool: the reference's arguments, checks and texts, own schedules only."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from duragent.agents import load_catalog
from duragent.scheduler import Destination, ManualClock, Schedules, ScheduleTool
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
