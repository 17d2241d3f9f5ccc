"""In a group, someone else's message waits for a pending approval's requester (issue 40).

Through a real runtime and the fake Bot API: Ann mentions the bot, the scripted model asks to
run ``bash`` (policy ``mode: ask``), the prompt appears. Bob then mentions the bot. Before
``turns/approval_wait.py`` Bob's turn cancelled Ann's approval as a deny (anyone could deny
anyone's request by writing; in a busy group nobody's approval lived long enough to be
pressed); now it waits for Ann's decision, at most the group queue's
``approval_wait_seconds``. In a DM, with ``approval_wait_seconds: 0``, or when the requester
writes again, a new message still cancels the approval at once (the reference's rule).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from duragent.frontkit.approvals import NO_PENDING
from duragent.session.operations import SessionOps
from duragent.testing import RecordedRequest, Reply, ToolCallReply
from tests.gateways.http.api_fixtures import counted_asks
from tests.gateways.telegram.rig import ASK_POLICY, BASH_TOOL, BOT, Rig, telegram_rig
from tests.polling import eventually

GROUP = -100777
ANN, BOB = 7, 8
OUTPUT = "apples-42"
COMMAND = f"echo {OUTPUT}"
RUN = Reply(tool_calls=[ToolCallReply(name="bash", arguments={"command": COMMAND}, id="c1")])
DONE = f"It printed {OUTPUT}."
CANCELLED = "Skipped: approval cancelled: a new message arrived first"
WAITER = "duragent.turns.approval_wait"
"""The logger that says a requester's approval had no decision in time."""
NEVER = 3600
"""An approval wait no test outlives: a message that waited for it would time the test out."""


def access(wait: int | None) -> dict[str, Any]:
    """Groups answered on a mention; the group queue's ``approval_wait_seconds`` when given."""
    groups: dict[str, Any] = {"activation": "mention"}
    if wait is not None:
        groups["queue"] = {"approval_wait_seconds": wait}
    return {"groups": groups}


def prompts(rig: Rig, chat_id: int) -> list[dict[str, Any]]:
    """The approval prompts the bot sent to the chat (its messages with buttons)."""
    sent = [c for c in rig.tg.calls("sendMessage", chat_id=chat_id) if c.ok]
    return [c.answer["result"] for c in sent if c.answer and "reply_markup" in c.params]


async def ask(rig: Rig, chat_id: int, text: str) -> dict[str, Any]:
    """Ann writes ``text``, the model asks to run ``COMMAND``; the prompt, once all settled."""
    rig.llm.enqueue(RUN)
    rig.tg.push_message(chat_id, text, user_id=ANN, first_name="Ann")
    assert await eventually(lambda: len(prompts(rig, chat_id)) == 1), "no approval prompt"
    await rig.settle()
    prompt = prompts(rig, chat_id)[0]
    assert COMMAND in prompt["text"]
    assert rig.tg.sent_messages(chat_id) == [prompt["text"]]
    return prompt


async def press(rig: Rig, chat_id: int, prompt: dict[str, Any]) -> str:
    """Ann presses Allow Once on ``prompt``; the toast she is shown."""
    before = len(toasts(rig))
    rig.tg.push_callback_query(
        chat_id, prompt["message_id"], button="Allow Once", user_id=ANN, first_name="Ann"
    )
    assert await eventually(lambda: len(toasts(rig)) > before), "the press was not answered"
    return toasts(rig)[before]


def toasts(rig: Rig) -> list[str]:
    return [c.params.get("text", "") for c in rig.tg.calls("answerCallbackQuery") if c.ok]


def users(request: RecordedRequest) -> list[str]:
    """The texts of the request's user messages, in order."""
    return [str(m["content"]) for m in request.json["messages"] if m["role"] == "user"]


def tool_results(request: RecordedRequest) -> list[str]:
    return [str(m["content"]) for m in request.json["messages"] if m["role"] == "tool"]


def answered(rig: Rig, chat_id: int) -> list[tuple[str, int | None]]:
    """Each message the bot sent to the chat, with the message id it replies to (if any)."""
    out: list[tuple[str, int | None]] = []
    for call in rig.tg.calls("sendMessage", chat_id=chat_id):
        if call.ok and call.answer is not None:
            to = (call.params.get("reply_parameters") or {}).get("message_id")
            out.append((call.answer["result"]["text"], to))
    return out


def gave_up(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the waiter logged when a requester's approval had no decision in time."""
    return [r.getMessage() for r in caplog.records if r.name == WAITER]


async def test_a_members_mention_waits_for_anothers_approval_instead_of_cancelling_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=WAITER)
    async with telegram_rig(
        tmp_path, access=access(None), tools=BASH_TOOL, policy=ASK_POLICY
    ) as rig:
        prompt = await ask(rig, GROUP, f"@{BOT} please run echo")
        rig.llm.enqueue(Reply(text=DONE))  # the rest of Ann's turn; Bob's is echoed
        bobs = rig.tg.push_message(GROUP, f"@{BOT} what time is it?", user_id=BOB, first_name="Bob")
        await rig.delivered(bobs)  # recorded: its turn is due

        assert await press(rig, GROUP, prompt) == f"✓ Running: {COMMAND}"
        await rig.replies(GROUP, 3)
        await rig.settle()
        edited = rig.tg.message(GROUP, prompt["message_id"])
    assert answered(rig, GROUP) == [
        (prompt["text"], None),
        (DONE, None),  # the rest of Ann's turn, first
        (f"re: Bob: @{BOT} what time is it?", bobs["message"]["message_id"]),  # then Bob's
    ]
    assert edited is not None
    assert edited["text"].endswith("Allowed once by Ann")
    first, annes_rest, bobs_turn = rig.llm.requests
    assert tool_results(first) == []
    assert [OUTPUT in result for result in tool_results(annes_rest)] == [True]
    # the rest of Ann's turn answers Ann: Bob's message, written while it waited, is his
    # turn's (it was recorded between Ann's call and its result)
    assert "what time is it" not in str(annes_rest.json)
    assert users(annes_rest)[-1].endswith("please run echo")
    assert users(bobs_turn)[-1].endswith("what time is it?")
    assert CANCELLED not in str(bobs_turn.json)
    assert [OUTPUT in result for result in tool_results(bobs_turn)] == [True]  # Ann's, done
    assert gave_up(caplog) == []  # Ann decided: Bob's turn did not wait out the limit


async def test_a_requester_who_never_decides_holds_the_group_only_for_the_wait(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=WAITER)
    async with telegram_rig(tmp_path, access=access(1), tools=BASH_TOOL, policy=ASK_POLICY) as rig:
        prompt = await ask(rig, GROUP, f"@{BOT} please run echo")
        bobs = rig.tg.push_message(GROUP, f"@{BOT} what time is it?", user_id=BOB, first_name="Bob")
        await rig.replies(GROUP, 2)  # Ann never pressed: the wait ran out
        await rig.settle()
        assert await press(rig, GROUP, prompt) == NO_PENDING
        await rig.settle()
    assert answered(rig, GROUP) == [
        (prompt["text"], None),
        (f"re: Bob: @{BOT} what time is it?", bobs["message"]["message_id"]),
    ]
    assert len(rig.llm.requests) == 2  # Ann's call never ran
    assert tool_results(rig.llm.requests[1]) == [CANCELLED]
    (said,) = gave_up(caplog)
    assert f"{ANN}'s approval had no decision in 1 s" in said


@pytest.mark.parametrize(
    ("chat_id", "wait", "writer"),
    [(GROUP, 0, BOB), (GROUP, NEVER, ANN), (ANN, NEVER, ANN)],
    ids=["group-wait-0-another-member", "group-the-requester-again", "dm"],
)
async def test_a_new_message_cancels_the_approval_at_once_where_the_old_rule_holds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, chat_id: int, wait: int, writer: int
) -> None:
    """Old behaviour kept: a DM, a group with ``approval_wait_seconds: 0``, and the requester
    writing again in a group (with a wait no test outlives: had it waited, it timed out)."""
    caplog.set_level(logging.INFO, logger=WAITER)
    name = "Ann" if writer == ANN else "Bob"
    mention = f"@{BOT} " if chat_id == GROUP else ""
    async with telegram_rig(
        tmp_path, access=access(wait), tools=BASH_TOOL, policy=ASK_POLICY
    ) as rig:
        prompt = await ask(rig, chat_id, f"{mention}please run echo")
        again = rig.tg.push_message(
            chat_id, f"{mention}never mind, hello", user_id=writer, first_name=name
        )
        await rig.replies(chat_id, 2)
        await rig.settle()
        assert await press(rig, chat_id, prompt) == NO_PENDING
        await rig.settle()
    said = f"{name}: {mention}never mind, hello" if chat_id == GROUP else "never mind, hello"
    in_reply = again["message"]["message_id"] if chat_id == GROUP else None  # a DM: none
    assert answered(rig, chat_id) == [(prompt["text"], None), (f"re: {said}", in_reply)]
    assert len(rig.llm.requests) == 2  # Ann's call never ran
    assert tool_results(rig.llm.requests[1]) == [CANCELLED]
    assert gave_up(caplog) == []  # cancelled at once, not after a wait


async def test_a_group_message_with_no_approval_waiting_asks_its_session_no_more_than_a_dm(
    tmp_path: Path,
) -> None:
    async with telegram_rig(tmp_path, access=access(None)) as rig:
        asks = counted_asks(rig.runtime.registry)
        rounds: dict[str, list[Any]] = {}
        for name, chat, mention in (("dm", ANN, ""), ("group", GROUP, f"@{BOT} ")):
            rig.tg.push_message(chat, f"{mention}warm up", user_id=ANN, first_name="Ann")
            await rig.replies(chat, 1)
            await rig.settle()
            before = len(asks)
            rig.tg.push_message(chat, f"{mention}hello", user_id=ANN, first_name="Ann")
            await rig.replies(chat, 2)
            await rig.settle()
            rounds[name] = asks[before:]
    group = [op for op in rounds["group"] if op is not SessionOps.recent_silent]  # its chatter
    assert group == rounds["dm"]  # no "is an approval waiting?" round trip
    assert SessionOps.info not in rounds["group"]


async def test_a_message_written_while_an_approved_command_runs_does_not_cut_it(
    tmp_path: Path,
) -> None:
    slow = Reply(
        tool_calls=[ToolCallReply(name="bash", arguments={"command": f"sleep 3; {COMMAND}"})]
    )
    async with telegram_rig(
        tmp_path, access=access(None), tools=BASH_TOOL, policy=ASK_POLICY
    ) as rig:
        rig.llm.enqueue(slow)
        rig.tg.push_message(GROUP, f"@{BOT} please run echo", user_id=ANN, first_name="Ann")
        assert await eventually(lambda: len(prompts(rig, GROUP)) == 1), "no approval prompt"
        await rig.settle()
        rig.llm.enqueue(Reply(text=DONE))
        assert (await press(rig, GROUP, prompts(rig, GROUP)[0])).startswith("✓ Running")
        bob = f"@{BOT} what time is it?"
        rig.tg.push_message(GROUP, bob, user_id=BOB, first_name="Bob")  # while it sleeps
        await rig.replies(GROUP, 3)
        await rig.settle()
    annes_rest = rig.llm.requests[1]
    assert [OUTPUT in result for result in tool_results(annes_rest)] == [True]
    assert "interrupted" not in str(annes_rest.json)
