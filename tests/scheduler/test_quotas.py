"""Schedule quotas (issue 33): a chat may not make a flood of schedules, nor fast ones.

One message once made 32 schedules and a chat received 240 messages in ten seconds. The
``schedule`` tool now refuses, naming the limit and the field that raises it, and writes
nothing it refused; what the operator makes (HTTP, CLI) or agent.yaml declares is not limited.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from duragent.agents import load_catalog
from duragent.agents.access_spec import QuotaSpec
from duragent.core.caller import Caller, ChatRef
from duragent.scheduler import Destination, ManualClock, Schedules, ScheduleTool
from duragent.scheduler.model import At, Every, MessagePayload
from duragent.scheduler.quotas import shortest_gap
from duragent.tools.base import ToolContext
from tests.scheduler.rig import START, RecordingPayloads

CHAT = Destination("telegram", "42")
OTHER_CHAT = Destination("telegram", "43")
SESSIONS = {"chat-session": CHAT, "other-chat-session": OTHER_CHAT}
INTERVAL = "spec.access.quotas.min_schedule_interval_seconds"
PER_CHAT = "spec.access.quotas.schedules_per_chat"


@pytest.fixture
def schedules(tmp_path: Path, write_agent: Callable[..., Path]) -> Schedules:
    write_agent("helper")
    catalog = load_catalog(tmp_path / ".duragent" / "agents")
    return Schedules(
        tmp_path / "schedules",
        agents=lambda: catalog,
        payloads=RecordingPayloads(),
        clock=ManualClock(START),
    )


def tool(schedules: Schedules, **quotas: int) -> ScheduleTool:
    async def chat_of(session_id: str) -> Destination | None:
        return SESSIONS.get(session_id)

    return ScheduleTool(schedules, chat_of, QuotaSpec(**quotas) if quotas else None)


def ctx(tmp_path: Path, session: str = "chat-session") -> ToolContext:
    chat = SESSIONS[session]
    return ToolContext(
        caller=Caller(role="member", chat=ChatRef(chat.gateway, chat.chat_id), sender_id="7"),
        session_id=session, agent_name="helper", agent_dir=tmp_path,
        workspace_dir=tmp_path, world_memory_dir=tmp_path,
    )  # fmt: skip


def files(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "schedules"
    return sorted(folder.glob("*.yaml")) if folder.exists() else []


async def create(
    made: ScheduleTool, tmp_path: Path, session: str = "chat-session", **args: Any
) -> tuple[bool, str]:
    outcome = await made.run({"action": "create", **args}, ctx(tmp_path, session))
    return outcome.success, outcome.content


@pytest.mark.parametrize(
    ("quotas", "args", "text"),
    [
        ({}, {"every_seconds": 1},
         f"Error: quota: this schedule would run every 1 s; schedules made from a chat may run "
         f"at most once every 60 s ({INTERVAL}). Use a longer interval, or the agent's owner "
         f"can lower {INTERVAL} in its agent.yaml."),
        ({}, {"every_seconds": 59}, "would run every 59 s"),
        ({}, {"cron": "* * * * * *"}, "would run every 1 s"),
        ({}, {"cron": "*/30 * * * * *"}, "would run every 30 s"),
        ({}, {"cron": "0,30 0 9 * * *"}, "would run every 30 s"),  # twice a day, 30 s apart
        ({}, {"cron": "*/10 * * * * * 2030"}, "would run every 10 s"),  # 7 fields
        ({"min_schedule_interval_seconds": 3600}, {"cron": "*/30 * * * *"},
         "would run every 1800 s; schedules made from a chat may run at most once every 3600 s"),
        ({"min_schedule_interval_seconds": 3600}, {"every_seconds": 3599}, "every 3599 s"),
        ({"schedules_per_chat": 0}, {"every_seconds": 3600},
         f"Error: quota reached: schedules may not be made from a chat ({PER_CHAT} is 0). "
         f"Cancel one first (action=cancel), or the agent's owner can raise {PER_CHAT} in its "
         "agent.yaml."),
    ],
)  # fmt: skip
async def test_a_refused_schedule_names_its_limit_and_nothing_is_written(
    schedules: Schedules, tmp_path: Path, quotas: dict[str, int], args: dict[str, Any], text: str
) -> None:
    ok, content = await create(tool(schedules, **quotas), tmp_path, task="post", **args)
    assert not ok
    assert text in content
    assert files(tmp_path) == []
    assert schedules.listing() == []


@pytest.mark.parametrize(
    "args",
    [
        {"every_seconds": 60},
        {"cron": "* * * * *"},  # every minute: 60 s
        {"cron": "0 * * * * *"},  # 6 fields, once a minute
        {"cron": "0 9 * * MON-FRI"},
        {"at": "2026-01-01T00:00:01Z"},  # one-shot: no interval
    ],
)
async def test_a_schedule_at_the_minimum_interval_is_made(
    schedules: Schedules, tmp_path: Path, args: dict[str, Any]
) -> None:
    ok, content = await create(tool(schedules), tmp_path, message="hi", **args)
    assert ok, content
    assert len(files(tmp_path)) == 1


async def test_a_one_shot_is_made_whatever_the_minimum_interval(
    schedules: Schedules, tmp_path: Path
) -> None:
    made = tool(schedules, min_schedule_interval_seconds=10**9)
    ok, content = await create(made, tmp_path, at="2026-01-01T00:00:01Z", message="hi")
    assert ok, content


async def test_the_twenty_first_schedule_of_a_chat_is_refused_and_not_written(
    schedules: Schedules, tmp_path: Path
) -> None:
    made = tool(schedules)
    for _ in range(20):
        ok, content = await create(made, tmp_path, every_seconds=3600, task="post")
        assert ok, content
    ok, content = await create(made, tmp_path, every_seconds=3600, task="post")
    assert not ok
    assert content == (
        f"Error: quota reached: this chat has 20 active schedules, the most {PER_CHAT} allows "
        f"(20). Cancel one first (action=cancel), or the agent's owner can raise {PER_CHAT} "
        "in its agent.yaml."
    )
    assert len(files(tmp_path)) == 20
    assert len(schedules.listing(active_only=True)) == 20


async def test_only_the_chats_own_active_schedules_count(
    schedules: Schedules, tmp_path: Path
) -> None:
    made = tool(schedules, schedules_per_chat=2)
    ok, first = await create(made, tmp_path, every_seconds=3600, message="a")
    assert ok
    assert (await create(made, tmp_path, every_seconds=3600, message="b"))[0]
    assert not (await create(made, tmp_path, every_seconds=3600, message="c"))[0]
    # another chat has its own count
    assert (await create(made, tmp_path, "other-chat-session", every_seconds=3600, message="x"))[0]
    # what the operator makes for the chat (HTTP, CLI: no session) is not counted
    await schedules.add_async(
        schedules.new(agent="helper", timing=Every(1), payload=MessagePayload("op"),
                      destination=CHAT)
    )  # fmt: skip
    assert not (await create(made, tmp_path, every_seconds=3600, message="c"))[0]
    # a cancelled one frees its place
    await schedules.cancel_async(first.rsplit(" ", 1)[1], agent="helper")
    ok, content = await create(made, tmp_path, every_seconds=3600, message="c")
    assert ok, content


async def test_the_operator_and_agent_yaml_may_schedule_faster_than_a_chat(
    tmp_path: Path, write_agent: Callable[..., Path]
) -> None:
    folder = write_agent("helper")
    agent_yaml = folder / "agent.yaml"
    agent_yaml.write_text(
        agent_yaml.read_text()
        + "  schedules:\n    - name: pulse\n      schedule: {every: {every_seconds: 1}}\n"
        "      payload: {message: {message: tick}}\n"
    )
    catalog = load_catalog(tmp_path / ".duragent" / "agents")
    schedules = Schedules(
        tmp_path / "schedules", agents=lambda: catalog, payloads=RecordingPayloads(),
        clock=ManualClock(START),
    )  # fmt: skip
    operator = schedules.add(
        schedules.new(agent="helper", timing=Every(1), payload=MessagePayload("op"))
    )
    loaded = {s.id: s for s in schedules.load()}
    assert loaded["decl_helper_pulse"].timing == Every(1, None)
    assert loaded[operator.id].timing == Every(1)
    assert schedules.problems == []


async def test_a_fast_chat_schedule_written_before_the_quota_is_loaded_as_written(
    schedules: Schedules, tmp_path: Path
) -> None:
    """The scheduler never rewrites a file: it runs as written until someone cancels it
    (one run at a time, due times passed meanwhile coalesced into one ``missed`` line)."""
    old = schedules.add(
        schedules.new(agent="helper", timing=Every(1), payload=MessagePayload("tick"),
                      destination=CHAT, created_by_session="chat-session")
    )  # fmt: skip
    before = files(tmp_path)[0].read_text()
    assert [s.id for s in schedules.load()] == [old.id]
    assert files(tmp_path)[0].read_text() == before
    ok, content = await create(tool(schedules), tmp_path, every_seconds=1, message="tick")
    assert not ok
    assert "would run every 1 s" in content


@pytest.mark.parametrize(
    ("expr", "gap"),
    [
        ("* * * * *", 60),
        ("*/5 * * * *", 300),
        ("0,1 * * * *", 60),
        ("59 23 * * *", 86_400),
        ("0 9 * * MON", 86_400),  # counted as daily: never longer than the real gap
        ("* * * * * *", 1),
        ("*/15 * * * * *", 15),
        ("0,30 0 0 1 1 * 2030", 30),
        ("0 0 0,12 * * *", 43_200),
    ],
)
def test_the_shortest_gap_of_a_cron(expr: str, gap: int) -> None:
    assert shortest_gap(expr) == gap


def test_a_past_one_shot_is_still_refused_as_before(schedules: Schedules) -> None:
    with pytest.raises(Exception, match="must be in the future"):
        schedules.new(agent="helper", timing=At(START), payload=MessagePayload("x"))


async def test_creates_made_at_once_keep_to_the_quota(schedules: Schedules, tmp_path: Path) -> None:
    """Each create checks the quota and writes: made at once (a step's calls, two sessions
    of the chat), a check must not pass before the write of another it lets through."""
    made = tool(schedules, schedules_per_chat=2)
    outcomes = await asyncio.gather(
        *(create(made, tmp_path, every_seconds=3600, task=f"post {i}") for i in range(4))
    )
    assert [ok for ok, _ in outcomes].count(True) == 2, outcomes
    assert len(schedules.listing(active_only=True)) == 2
