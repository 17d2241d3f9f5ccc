"""The turn an approval paused goes on from its own message, and answers only that one.

Someone else may write while a call waits for a decision (in a group their message waits
for the requester's decision, ``turns.approval_wait``). Once the call is allowed, the turn
goes on without that later message (the model answers the message that asked), and its
reply records that it answers only up to the turn's own message: the later one is still
owed, so a restart's recovery (``frontkit.recovery``) still gives it a turn.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duragent.session import SessionInfo
from duragent.testing import Reply, ToolCallReply
from duragent.turns import AwaitingApproval, Complete
from tests.polling import eventually
from tests.turns.turn_fixtures import Harness, harness

ASK = """\
apiVersion: duragent/v1alpha1
kind: Policy
mode: ask
"""

ASKED = "please list the files"
LATER = "and what is the weather like?"


def bash_call(command: str) -> Reply:
    call = ToolCallReply(name="bash", arguments={"command": command}, id="c1")
    return Reply(tool_calls=[call])


@dataclass(frozen=True)
class Continued:
    """What the scenario left: the seqs of both messages, the reply, the session after."""

    asked_seq: int
    later_seq: int | None
    reply: Complete
    info: SessionInfo
    request: dict[str, Any]


async def pause_on_bash(h: Harness) -> tuple[str, int]:
    """Sender 7 asks; the model calls bash, which needs approval: the session waits."""
    h.server.enqueue(bash_call("echo approved-output"))
    sid = await h.runner.start_session("bot")
    paused = await h.runner.run(sid, ASKED, sender_id="7")
    assert isinstance(paused, AwaitingApproval)
    assert paused.command == "echo approved-output"
    info = await h.registry.handle(sid).info()
    assert info.pending_approval is not None
    return sid, info.last_user_seq


async def continue_after(h: Harness, sid: str, asked_seq: int, later_seq: int | None) -> Continued:
    """Sender 7's call is allowed once; the model answers with its final reply."""
    h.server.enqueue(Reply(text="here are the files"))
    before = len(h.server.requests)
    reply = await h.runner.approve(sid, "c1", "allow_once")
    assert isinstance(reply, Complete)
    assert reply.content == "here are the files"
    assert len(h.server.requests) == before + 1
    info = await h.registry.handle(sid).info()
    request = h.server.requests[-1].json
    return Continued(asked_seq, later_seq, reply, info, request)


async def scenario(tmp_path: Path, *, someone_writes: bool) -> Continued:
    """Sender 7's turn pauses; sender 8 writes meanwhile (or nobody); 7's call is allowed."""
    async with harness(tmp_path, builtins=["bash"], policy=ASK) as h:
        sid, asked_seq = await pause_on_bash(h)
        later_seq = None
        if someone_writes:
            accepted = await h.runner.accept(sid, LATER, sender_id="8")
            assert not accepted.duplicate
            later_seq = accepted.seq
            assert later_seq > asked_seq
            assert not h.runner.is_running(sid)  # recorded, no turn of its own started
        return await continue_after(h, sid, asked_seq, later_seq)


def texts(request: dict[str, Any], role: str) -> list[str]:
    return [str(m.get("content") or "") for m in request["messages"] if m.get("role") == role]


async def test_the_continuation_shows_the_model_the_asking_message_and_not_a_later_one(
    tmp_path: Path,
) -> None:
    done = await scenario(tmp_path, someone_writes=True)
    users = texts(done.request, "user")
    assert users[-1] == ASKED
    assert all(LATER not in text for text in users)
    assert LATER not in str(done.request["messages"])
    tool_results = texts(done.request, "tool")
    assert tool_results
    assert "approved-output" in tool_results[-1]  # the approved call ran before the reply


async def test_a_message_written_while_the_approval_waited_is_still_owed_after_the_reply(
    tmp_path: Path,
) -> None:
    done = await scenario(tmp_path, someone_writes=True)
    assert done.later_seq is not None
    assert done.info.pending_approval is None
    assert done.info.last_user_seq == done.later_seq
    assert done.info.last_answered_seq >= done.asked_seq
    assert done.info.last_answered_seq < done.later_seq
    assert done.info.last_user_seq > done.info.last_answered_seq  # recovery answers it


async def test_with_no_later_message_the_continuation_leaves_nothing_owed(
    tmp_path: Path,
) -> None:
    done = await scenario(tmp_path, someone_writes=False)
    assert done.later_seq is None
    assert texts(done.request, "user")[-1] == ASKED
    assert done.reply.reply_seq is not None
    assert done.info.last_answered_seq >= done.asked_seq  # the reply answers its message
    assert done.info.last_user_seq == done.asked_seq
    assert done.info.last_user_seq <= done.info.last_answered_seq


async def test_a_message_written_while_the_approved_call_runs_is_still_owed_after_the_reply(
    tmp_path: Path,
) -> None:
    """Found by the month of strangers: the decision came with nobody else written yet, so
    the reply recorded that it answered everything before it, also a message recorded
    while the approved call ran; a kill then lost that message's turn (it was queued in
    memory only) and recovery found nothing owed."""
    go = tmp_path / "go"
    command = f"while [ ! -e {go} ]; do sleep 0.02; done; echo approved-output"
    async with harness(tmp_path, builtins=["bash"], policy=ASK) as h:
        h.server.enqueue(bash_call(command))
        sid = await h.runner.start_session("bot")
        paused = await h.runner.run(sid, ASKED, sender_id="7")
        assert isinstance(paused, AwaitingApproval)
        session = h.registry.handle(sid)
        asked_seq = (await session.info()).last_user_seq
        h.server.enqueue(Reply(text="here are the files"))
        approving = asyncio.create_task(h.runner.approve(sid, "c1", "allow_once"))

        async def decided() -> bool:  # the decision is on disk: the approved call runs
            return (await session.info()).pending_approval is None

        assert await eventually(decided), "the approval was never decided"
        later = await h.runner.accept(sid, LATER, sender_id="8", steer=False)
        go.touch()
        reply = await approving
        info = await session.info()
    assert isinstance(reply, Complete)
    assert later.seq > asked_seq
    assert info.last_user_seq == later.seq
    assert asked_seq <= info.last_answered_seq < later.seq  # owed: recovery gives it a turn


async def test_a_message_steered_into_the_turn_before_it_asked_is_answered_by_the_continuation(
    tmp_path: Path,
) -> None:
    """Found by the month of strangers (Discord): a person wrote again while the first reply
    was still streaming; the turn answered the first, went on to the second, whose call
    asked for approval. The continuation dropped the second message (written after the
    turn's own) and answered the first again; the second was never answered."""
    async with harness(tmp_path, builtins=["bash"], policy=ASK) as h:
        h.server.enqueue(Reply(text="answer one", delay=1.0), bash_call("echo approved-output"))
        sid = await h.runner.start_session("bot")
        running = asyncio.create_task(h.runner.run(sid, ASKED, sender_id="7"))
        assert await eventually(lambda: len(h.server.requests) == 1)
        steered = await h.runner.accept(sid, LATER, sender_id="7")
        assert steered.steered is not None
        paused = await running
        assert isinstance(paused, AwaitingApproval)
        h.server.enqueue(Reply(text="answer two"))
        reply = await h.runner.approve(sid, "c1", "allow_once")
        info = await h.registry.handle(sid).info()
        request = h.server.requests[-1].json
    assert isinstance(reply, Complete)
    users = texts(request, "user")
    assert users[-1] == LATER  # the message that asked for the call, not the first again
    assert "approved-output" in texts(request, "tool")[-1]
    assert info.last_answered_seq >= steered.seq  # nothing owed: the reply answers it
