"""Schedules linked to a background job (``process_handle``) are cancelled when it ends."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from duragent.agents import load_catalog
from duragent.core.caller import OPERATOR
from duragent.frontkit import ProcessNotices, SessionNotices
from duragent.scheduler import (
    Destination,
    Every,
    ManualClock,
    Schedule,
    Schedules,
    ScheduleTool,
    TaskPayload,
)
from duragent.scheduler.chat import ChatPayloads
from duragent.testing import Reply
from duragent.tools.base import ToolContext
from duragent.tools.processes import ProcessMeta, ProcessRegistry, SpawnRequest
from tests.polling import eventually
from tests.scheduler.rig import START, RecordingPayloads
from tests.turns.turn_fixtures import harness


@pytest.fixture
def schedules(tmp_path: Path, write_agent: Callable[..., Path]) -> Schedules:
    write_agent("helper")
    write_agent("other")
    catalog = load_catalog(tmp_path / ".duragent" / "agents")
    return Schedules(
        tmp_path / "schedules",
        agents=lambda: catalog,
        payloads=RecordingPayloads(),
        clock=ManualClock(START),
    )


async def create(schedules: Schedules, agent: str, handle: str | None) -> str:
    async def chat_of(session_id: str) -> Destination | None:
        return Destination("telegram", "42")

    args = {"action": "create", "every_seconds": 60, "task": "check the job"}
    if handle:
        args["process_handle"] = handle
    ctx = ToolContext(
        caller=OPERATOR,
session_id="chat", agent_name=agent, agent_dir=Path("."), workspace_dir=Path("."),
        world_memory_dir=Path("."),
    )  # fmt: skip
    outcome = await ScheduleTool(schedules, chat_of).run(args, ctx)
    assert outcome.success, outcome.content
    return outcome.content.rsplit(" ", 1)[1]


async def test_the_tool_links_a_schedule_and_the_file_keeps_the_link(
    schedules: Schedules, tmp_path: Path
) -> None:
    sched_id = await create(schedules, "helper", "01jobhandle")
    doc = yaml.safe_load((tmp_path / "schedules" / f"{sched_id}.yaml").read_text())
    assert doc["process_handle"] == "01jobhandle"
    ctx = ToolContext(
        caller=OPERATOR,
session_id="chat", agent_name="helper", agent_dir=tmp_path, workspace_dir=tmp_path,
        world_memory_dir=tmp_path,
    )  # fmt: skip

    async def chat_of(session_id: str) -> Destination | None:
        return None

    listed = await ScheduleTool(schedules, chat_of).run({"action": "list"}, ctx)
    assert json.loads(listed.content.split("\n", 1)[1])[0]["process_handle"] == "01jobhandle"


async def test_cancel_linked_cancels_only_that_agents_schedules_for_that_job(
    schedules: Schedules,
) -> None:
    linked = await create(schedules, "helper", "01job")
    unlinked = await create(schedules, "helper", None)
    other_job = await create(schedules, "helper", "01otherjob")
    other_agent = await create(schedules, "other", "01job")
    assert schedules.cancel_linked("01job", agent="helper") == [linked]
    status = {s.id: s.status for s in schedules.listing()}
    assert status == {
        linked: "cancelled",
        unlinked: "active",
        other_job: "active",
        other_agent: "active",
    }


async def test_a_job_that_ends_cancels_its_linked_schedule_before_its_session_is_told(
    schedules: Schedules, tmp_path: Path
) -> None:
    order: list[str] = []

    class Notices(SessionNotices):
        def __init__(self) -> None:  # no turn runner: only the order matters here
            pass

        async def notify(self, session_id: str, text: str, *, notice_id: str) -> None:
            order.append("told")

    def cancel_linked(handle: str, agent: str) -> list[str]:
        order.append("cancelled")
        return schedules.cancel_linked(handle, agent=agent)

    registry = ProcessRegistry(
        tmp_path / "processes", events=ProcessNotices(Notices(), cancel_linked)
    )
    await registry.start()
    meta: ProcessMeta = await registry.spawn(
        SpawnRequest(
            command="until [ -e go ]; do sleep 0.02; done",
            cwd=tmp_path,
            session_id="chat",
            agent="helper",
        )
    )
    sched_id = await create(schedules, "helper", meta.handle)
    (tmp_path / "go").touch()
    assert await eventually(lambda: order == ["cancelled", "told"])
    await registry.stop()
    assert schedules.get(sched_id).status == "cancelled"


async def test_a_linked_tasks_prompt_names_its_job(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text="checked"))
        linked = Schedule(
            id="sched_watch",
            agent="bot",
            timing=Every(30),
            payload=TaskPayload("Check the job"),
            created_at=START,
            process_handle="01job",
        )

        async def record(session_id: str, seq: int) -> None:
            pass

        report = await ChatPayloads(h.runner, lambda gateway: None).run(linked, START, record)
        prompt = h.server.requests[0].body["messages"][-1]["content"]
    assert report.error is None
    assert prompt.endswith("(This is an automated task. Send the result to this chat.)"
                           "\n\nLinked process handle: 01job")  # fmt: skip
