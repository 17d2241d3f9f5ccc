"""``reload-agents`` takes the schedules the agent files declare now (issue 39, item 3).

Before, a reload swapped the agents and left the scheduler as it was: a schedule added to
``spec.schedules`` was neither listed nor run until a restart, and one removed kept firing.
Each test serves a workspace with the real ``Runtime`` on the scheduler's ``ManualClock``
(due times come by moving it, never by waiting) and reloads over HTTP, as the CLI does.
A schedule that must *not* fire is checked against one that does at the same due time: once
the keeper's run for a due time ended, the loop has looked at every schedule due then.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import httpx

from duragent.config import load_workspace
from duragent.runtime import Runtime
from duragent.scheduler import ManualClock
from duragent.scheduler.runs import to_ms
from duragent.testing import Reply, ToolCallReply
from duragent.testing.fake_gateway import message
from duragent.testing.gateway_control import GatewayControl
from tests.gateways.http.api_fixtures import Served, served, write_workspace
from tests.polling import eventually
from tests.scheduler.rig import START

KEEPER = """\
  schedules:
    - name: keeper
      schedule: {every: {every_seconds: 60}}
      payload: {message: {message: "tick"}}
"""
ADDED = """\
    - name: added
      schedule: {every: {every_seconds: 60}}
      payload: {message: {message: "tock"}}
"""
RELOAD = "/api/admin/v1/reload-agents"


@asynccontextmanager
async def serving(root: Path, clock: ManualClock) -> AsyncIterator[httpx.AsyncClient]:
    """The real runtime on ``root`` with the scheduler on ``clock`` (messages need no model)."""
    runtime = Runtime(load_workspace(root), port=0, clock=clock)
    await runtime.start()
    try:
        url = f"http://127.0.0.1:{runtime.http_port}"
        async with httpx.AsyncClient(base_url=url, timeout=120) as client:
            yield client
    finally:
        await runtime.aclose()


def declare(root: Path, schedules: str) -> None:
    """Rewrite the agent file with ``schedules`` (its ``spec.schedules`` block, or none)."""
    write_workspace(root, "http://127.0.0.1:9/v1", tools=schedules)


def run_log(root: Path, sched_id: str) -> list[dict[str, Any]]:
    path = root / ".duragent" / "schedules" / "runs" / f"{sched_id}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


async def ran_at(client: httpx.AsyncClient, sched_id: str, due: datetime) -> bool:
    """Whether the schedule's run for ``due`` ended ``ok``."""
    runs = (await client.get(f"/api/v1/schedules/{sched_id}")).json()["runs"]
    return any(r["status"] == "ok" and r["due"] == to_ms(due) for r in runs)


async def listed(client: httpx.AsyncClient) -> list[str]:
    return [s["id"] for s in (await client.get("/api/v1/schedules")).json()["schedules"]]


async def test_a_schedule_added_to_an_agent_file_runs_at_its_due_time_after_a_reload(
    tmp_path: Path,
) -> None:
    declare(tmp_path, KEEPER)
    clock = ManualClock(START + timedelta(seconds=30))
    async with serving(tmp_path, clock) as client:
        assert await listed(client) == ["decl_bot_keeper"]
        declare(tmp_path, KEEPER + ADDED)
        answer = await client.post(RELOAD)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert (body["reloaded"], body["agents"], body["broken"]) == (1, ["bot"], [])
        assert body["message"] == "Reloaded 1 agents"
        assert body["changes"] == {
            "agents": {
                "added": [],
                "removed": [],
                "changed": ["bot"],
                "parts": {"bot": ["spec.schedules"]},
            },
            "schedules": {"added": ["decl_bot_added"], "removed": [], "changed": []},
        }
        assert body["notes"] == []
        assert await listed(client) == ["decl_bot_added", "decl_bot_keeper"]
        due = START + timedelta(minutes=1)
        clock.set(due)
        assert await eventually(lambda: ran_at(client, "decl_bot_added", due))
    # registered at the reload: the due times before it were never its to run, nor missed
    lines = run_log(tmp_path, "decl_bot_added")
    assert [line["status"] for line in lines] == ["registered", "running", "recorded", "ok"]
    assert lines[0]["cursor"] == to_ms(START + timedelta(seconds=30))


async def test_a_schedule_removed_from_an_agent_file_never_fires_after_a_reload(
    tmp_path: Path,
) -> None:
    declare(tmp_path, KEEPER + ADDED)
    clock = ManualClock(START + timedelta(seconds=30))
    async with serving(tmp_path, clock) as client:
        first = START + timedelta(minutes=1)
        clock.set(first)
        assert await eventually(lambda: ran_at(client, "decl_bot_added", first))
        declare(tmp_path, KEEPER)
        answer = (await client.post(RELOAD)).json()
        assert answer["changes"]["schedules"] == {
            "added": [],
            "removed": ["decl_bot_added"],
            "changed": [],
        }
        assert await listed(client) == ["decl_bot_keeper"]
        assert (await client.get("/api/v1/schedules/decl_bot_added")).status_code == 404
        for minutes in (2, 3, 4):
            due = START + timedelta(minutes=minutes)
            clock.set(due)
            assert await eventually(partial(ran_at, client, "decl_bot_keeper", due))
    # its run log stays, and says why it stopped; nothing started after that
    lines = run_log(tmp_path, "decl_bot_added")
    ran = ["running", "recorded", "ok"]
    assert [line["status"] for line in lines] == ["registered", *ran, "removed"]
    assert lines[-1]["reason"] == "no longer declared in spec.schedules of agent 'bot'"


async def test_a_changed_schedule_takes_its_new_timing_from_the_reload_and_its_new_text(
    tmp_path: Path,
) -> None:
    declare(tmp_path, KEEPER)
    clock = ManualClock(START + timedelta(seconds=30))
    async with serving(tmp_path, clock) as client:
        first = START + timedelta(minutes=1)
        clock.set(first)
        assert await eventually(lambda: ran_at(client, "decl_bot_keeper", first))
        clock.set(first + timedelta(seconds=30))
        declare(tmp_path, KEEPER.replace("60", "7").replace('"tick"', '"tock"'))
        answer = (await client.post(RELOAD)).json()
        assert answer["changes"]["schedules"]["changed"] == ["decl_bot_keeper"]
        # every 7 s counts from the epoch: the first due time after the reload, none before
        reloaded_at = int((first + timedelta(seconds=30)).timestamp())
        due = datetime.fromtimestamp((reloaded_at // 7 + 1) * 7, START.tzinfo)
        one = (await client.get("/api/v1/schedules/decl_bot_keeper")).json()
        assert one["next_run_at"] == due.isoformat().replace("+00:00", "Z")
        clock.set(due)
        assert await eventually(lambda: ran_at(client, "decl_bot_keeper", due))
        runs = (await client.get("/api/v1/schedules/decl_bot_keeper")).json()["runs"]
        session = runs[-1]["session_id"]
        said = (await client.get(f"/api/v1/sessions/{session}/messages")).json()["messages"]
        assert [m["content"] for m in said if m["role"] == "assistant"] == ["tock"]
    lines = run_log(tmp_path, "decl_bot_keeper")
    ran = ["running", "recorded", "ok"]
    assert [line["status"] for line in lines] == ["registered", *ran, "registered", *ran]
    assert lines[4]["reason"] == "its timing changed"


# --- tools, access and hooks: read from the catalog at each turn and message ----------------

GREET = "  tools:\n    - {type: cli, name: greet, command: greet.sh}\n"
HOOK = '  hooks:\n    after_tool:\n      - {match: greet, message: "Say hi back."}\n'


def script(root: Path) -> None:
    """The ``greet`` tool's script, in the agent's folder before the agent is loaded."""
    folder = root / ".duragent" / "agents" / "bot"
    folder.mkdir(parents=True)
    (folder / "greet.sh").write_text("echo hello\n")


def greet_call(call_id: str) -> Reply:
    return Reply(tool_calls=[ToolCallReply(name="greet", arguments={"args": ""}, id=call_id)])


def results(body: dict[str, Any]) -> dict[str, str]:
    """Tool results the model was sent, by call id."""
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


def offered(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools", [])]


async def greeted(s: Served, sid: str, call_id: str) -> None:
    """A turn in which the model calls ``greet`` once, then answers."""
    s.server.enqueue(greet_call(call_id), Reply(text="done"))
    sent = await s.client.post(f"/api/v1/sessions/{sid}/messages", json={"content": "greet"})
    assert sent.status_code == 200, sent.text


async def reload_changing(s: Served, agent_yaml_tail: str) -> dict[str, Any]:
    """Rewrite the agent file (same model) and reload: what the answer says changed."""
    write_workspace(s.root, s.server.openai_base_url, tools=agent_yaml_tail)
    answer = await s.client.post(RELOAD)
    assert answer.status_code == 200, answer.text
    changes: dict[str, Any] = answer.json()["changes"]
    return changes


async def test_a_tool_removed_from_an_agent_file_is_refused_after_a_reload(
    tmp_path: Path,
) -> None:
    script(tmp_path)
    async with served(tmp_path, tools=GREET) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        await greeted(s, sid, "c1")
        assert results(s.server.requests[-1].json)["c1"].startswith("hello")
        changes = await reload_changing(s, "")
        assert changes["agents"]["parts"] == {"bot": ["spec.tools"]}
        await greeted(s, sid, "c2")
        asked, answered = s.server.requests[-2:]
        assert "greet" not in offered(asked.json)
        assert results(answered.json)["c2"].startswith("Unknown tool 'greet'")


async def test_a_hook_added_to_an_agent_file_steers_the_next_turn_after_a_reload(
    tmp_path: Path,
) -> None:
    script(tmp_path)
    async with served(tmp_path, tools=GREET) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        await greeted(s, sid, "c1")
        steer = {"role": "user", "content": "[steering] Say hi back."}
        assert steer not in s.server.requests[-1].json["messages"]
        changes = await reload_changing(s, GREET + HOOK)
        assert changes["agents"]["parts"] == {"bot": ["spec.hooks"]}
        await greeted(s, sid, "c2")
        assert s.server.requests[-1].json["messages"][-1] == steer


async def test_access_rules_changed_in_an_agent_file_hold_for_the_next_chat_message(
    tmp_path: Path,
) -> None:
    async with GatewayControl() as control:
        fake = control.command()
        gateway = (
            "gateways:\n  external:\n    - name: fake\n"
            f"      command: {json.dumps(fake['command'])}\n"
            f"      args: {json.dumps(fake['args'])}\n"
        )
        async with served(tmp_path, server_yaml=gateway) as s:
            child = await control.child()
            s.server.enqueue(Reply(text="hi there"))
            await child.emit(message("42", "hello", message_id="m1", sender_id="42"))
            answered = await child.command("send_message")
            assert answered["content"] == "hi there"
            changes = await reload_changing(s, "  access: {dm: {policy: pairing}}\n")
            assert changes["agents"]["parts"] == {"bot": ["spec.access"]}
            await child.emit(message("42", "hello again", message_id="m2", sender_id="42"))
            refused = await child.command("send_message", lambda c: c is not answered)
            assert "Your pairing code is" in refused["content"]
            assert s.server.pending == 0  # the model was not asked
