"""Schedules end to end: a served workspace, the fake Telegram Bot API, the scripted model.

Due runs go through the real path: ``Schedules`` → ``TurnRunner`` in the chat's session →
``Delivery`` → the Telegram gateway's outbound port → the fake Bot API server.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from duragent.frontkit.approval_rights import BLOCKED, UNASKED_OWNERS_ONLY
from duragent.scheduler import At, Destination, MessagePayload, Schedules, TaskPayload
from duragent.testing import Reply, ToolCallReply
from tests.gateways.telegram.rig import ASK_POLICY, BASH_TOOL, Rig, telegram_rig
from tests.gateways.telegram.test_approvals import buttons, prompt_in, toasts
from tests.polling import eventually
from tests.scheduler.rig import create

ANN = 7
CHAT = Destination("telegram", str(ANN))
ANN_OWNS = {"owners": {"telegram": [ANN]}}


def schedules(rig: Rig) -> Schedules:
    found = rig.runtime.schedules
    assert found is not None
    return found


def soon(rig: Rig) -> At:
    return At(schedules(rig).clock.now() + timedelta(milliseconds=300))


async def chat_messages(rig: Rig) -> list[tuple[str, str]]:
    turns = rig.runtime.turns
    session = await turns.session_for_chat("telegram", str(ANN), "bot")
    return [(m.role.value, m.content or "") for m in await turns.sessions.messages(session)]


async def test_a_message_reaches_the_chat_and_its_session_once(tmp_path: Path) -> None:
    async with telegram_rig(tmp_path) as rig:
        sched = create(schedules(rig),
            agent="bot", timing=soon(rig), payload=MessagePayload("Stand-up in 5 minutes"),
            destination=CHAT,
        )  # fmt: skip
        assert await rig.replies(ANN) == ["Stand-up in 5 minutes"]
        assert await eventually(lambda: schedules(rig).get(sched.id).status == "completed")
        assert await chat_messages(rig) == [("assistant", "Stand-up in 5 minutes")]
        assert schedules(rig).state(sched.id).last_status == "ok"
        assert len(rig.llm.requests) == 0  # a message needs no model
        saved = (tmp_path / ".duragent" / "schedules" / f"{sched.id}.yaml").read_text()
        assert 'status: "completed"' in saved


async def test_a_task_runs_a_turn_in_the_chat_session_and_its_reply_is_delivered(
    tmp_path: Path,
) -> None:
    async with telegram_rig(tmp_path) as rig:
        rig.llm.enqueue(Reply(text="Yesterday: 3 tickets closed."))
        create(schedules(rig),
            agent="bot", timing=soon(rig), payload=TaskPayload("Summarise yesterday"),
            destination=CHAT,
        )  # fmt: skip
        assert await rig.replies(ANN) == ["Yesterday: 3 tickets closed."]
        messages = await chat_messages(rig)
        assert messages[0][0] == "user"
        assert messages[0][1].startswith("[Scheduled Task]\n\nSummarise yesterday")
        assert messages[1] == ("assistant", "Yesterday: 3 tickets closed.")
        tools = [t["function"]["name"] for t in rig.llm.requests[0].json.get("tools", [])]
        assert "schedule" not in tools  # a scheduled task gets no schedule tool


async def test_an_approval_a_scheduled_task_asks_for_is_completed_by_a_press_after_a_restart(
    tmp_path: Path,
) -> None:
    async with telegram_rig(tmp_path, tools=BASH_TOOL, policy=ASK_POLICY, access=ANN_OWNS) as rig:
        rig.llm.enqueue(
            Reply(
                tool_calls=[ToolCallReply(name="bash", arguments={"command": "echo ok"}, id="c1")]
            ),
            Reply(text="The report script printed ok."),
        )
        create(schedules(rig),
            agent="bot", timing=soon(rig), payload=TaskPayload("Run the report script"),
            destination=CHAT,
        )  # fmt: skip
        prompt = await prompt_in(rig, ANN)
        assert buttons(prompt) == ["Allow Once", "Allow Always", "Deny"]
        await rig.settle()
        await rig.restart()
        rig.tg.push_callback_query(ANN, prompt["message_id"], button="Allow Once", user_id=ANN)
        assert await eventually(
            lambda: "The report script printed ok." in rig.tg.sent_messages(ANN)
        )


def run_echo(rig: Rig, destination: Destination, reply: str) -> None:
    """A task due now whose turn asks to run ``echo ok`` (and then says ``reply``)."""
    rig.llm.enqueue(
        Reply(tool_calls=[ToolCallReply(name="bash", arguments={"command": "echo ok"}, id="c1")]),
        Reply(text=reply),
    )
    create(schedules(rig),
        agent="bot", timing=soon(rig), payload=TaskPayload("Run the report script"),
        destination=destination,
    )  # fmt: skip


async def test_a_blocked_member_pressing_allow_on_a_scheduled_tasks_approval_runs_nothing(
    tmp_path: Path,
) -> None:
    group, eve = -100300, 66
    access = {"owners": {"telegram": [ANN]}, "groups": {"sender_overrides": {str(eve): "block"}}}
    async with telegram_rig(tmp_path, tools=BASH_TOOL, policy=ASK_POLICY, access=access) as rig:
        run_echo(rig, Destination("telegram", str(group)), "The report script printed ok.")
        prompt = await prompt_in(rig, group)
        await rig.settle()
        for button in ("Allow Once", "Allow Always"):
            await rig.delivered(
                rig.tg.push_callback_query(group, prompt["message_id"], button=button, user_id=eve)
            )
        await rig.settle()
        assert toasts(rig) == [BLOCKED, BLOCKED]
        assert not (tmp_path / ".duragent" / "agents" / "bot" / "policy.local.yaml").exists()
        assert len(rig.llm.requests) == 1  # the command did not run: no turn went on
        assert rig.tg.message(group, prompt["message_id"]) == prompt  # buttons still there
        await rig.delivered(
            rig.tg.push_callback_query(
                group, prompt["message_id"], button="Allow Once", user_id=ANN
            )
        )
        assert await eventually(
            lambda: "The report script printed ok." in rig.tg.sent_messages(group)
        )


async def test_a_scheduled_tasks_approval_without_an_owner_says_so_and_http_still_decides_it(
    tmp_path: Path,
) -> None:
    async with telegram_rig(tmp_path, tools=BASH_TOOL, policy=ASK_POLICY) as rig:
        run_echo(rig, CHAT, "The report script printed ok.")
        prompt = await prompt_in(rig, ANN)
        note = (await rig.replies(ANN, 2))[-1]  # after the prompt
        assert note.startswith("Only an owner can answer this approval")
        assert "spec.access.owners.telegram in agents/bot/agent.yaml" in note
        await rig.settle()
        await rig.delivered(
            rig.tg.push_callback_query(ANN, prompt["message_id"], button="Allow Once", user_id=ANN)
        )
        await rig.settle()
        assert toasts(rig) == [UNASKED_OWNERS_ONLY]
        assert len(rig.llm.requests) == 1
        session = await rig.runtime.turns.session_for_chat("telegram", str(ANN), "bot")
        assert f"POST /api/v1/sessions/{session}/approve" in note
        answer = await rig.http.post(
            f"/api/v1/sessions/{session}/approve", json={"call_id": "c1", "decision": "allow_once"}
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["content"] == "The report script printed ok."
        assert await eventually(  # the chat the turn belongs to hears the rest of it too
            lambda: "The report script printed ok." in rig.tg.sent_messages(ANN)
        )


async def test_the_schedule_tool_creates_a_schedule_for_the_chat_it_is_called_in(
    tmp_path: Path,
) -> None:
    tools = [{"type": "builtin", "name": "schedule"}]
    async with telegram_rig(tmp_path, tools=tools) as rig:
        create = {"action": "create", "cron": "0 9 * * MON-FRI", "tz": "Europe/Berlin",
                  "task": "Post the stand-up agenda"}  # fmt: skip
        rig.llm.enqueue(
            Reply(tool_calls=[ToolCallReply(name="schedule", arguments=create, id="c1")]),
            Reply(text="Scheduled."),
        )
        rig.tg.push_message(ANN, "every weekday at 9 post the agenda", user_id=ANN)
        assert await rig.replies(ANN) == ["Scheduled."]
        tool_results = [m for m in rig.llm.requests[-1].json["messages"] if m["role"] == "tool"]
        assert "Created recurring schedule: sched_" in str(tool_results[0]["content"])
        (made,) = schedules(rig).listing(agent="bot")
        assert made.destination == CHAT
        assert made.created_by_session is not None
