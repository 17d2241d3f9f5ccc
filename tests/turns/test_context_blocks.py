"""Per-turn context blocks (a group's recent chatter) and the turn's requester.

A block is quoted in a user message right before the turn's own (people wrote it: never
system text, issue 33): the model reads it, the budget counts it, the history never stores
it. The sender of the message that starts a turn is recorded on the approval that turn asks
for (who may decide in a chat).
"""

from __future__ import annotations

from pathlib import Path

from duragent.context.quoting import quoted_block
from duragent.testing import Reply, ToolCallReply
from duragent.turns import AwaitingApproval, Complete
from tests.turns.test_approval import ASK
from tests.turns.turn_fixtures import FnTool, harness

BLOCK = "Recent group conversation before you were mentioned:\n\nAnn: the build is red\n"


async def test_a_block_reaches_the_model_quoted_before_the_message_and_is_never_stored(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text="one"), Reply(text="two"))
        sid = await h.runner.start_session("bot")
        first = await h.runner.run(sid, "Bob: why?", context_blocks=(BLOCK,))
        second = await h.runner.run(sid, "Bob: and now?")
        messages = await h.registry.handle(sid).messages()
        events = await h.registry.handle(sid).events()
    with_block, without = (r.json["messages"] for r in h.server.requests)
    assert isinstance(first, Complete)
    assert isinstance(second, Complete)
    assert with_block[-2] == {"role": "user", "content": quoted_block([("", BLOCK)])}
    assert with_block[-1] == {"role": "user", "content": "Bob: why?"}
    assert "the build is red" not in with_block[0]["content"]
    assert "the build is red" not in str(without)
    assert all("the build is red" not in (m.content or "") for m in messages)
    assert all("the build is red" not in e.to_json() for e in events)


async def test_a_block_counts_against_the_context_budget(tmp_path: Path) -> None:
    big = "Recent group conversation before you were mentioned:\n\n" + "Ann: word\n" * 400
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text="one"), Reply(text="two"))
        plain = await h.runner.start_session("bot")
        await h.runner.run(plain, "hi")
        buffered = await h.runner.start_session("bot")
        await h.runner.run(buffered, "hi", context_blocks=(big,))
        costs = []
        for sid in (plain, buffered):
            events = await h.registry.handle(sid).events()
            reply = next(e for e in events if e.type == "assistant_response")
            costs.append(reply.data["budget"]["request_tokens"])
    assert costs[1] - costs[0] >= 400  # the block's tokens are part of the request's cost


async def test_the_sender_who_started_the_turn_is_recorded_on_its_approval(
    tmp_path: Path,
) -> None:
    echo = FnTool("echo", lambda a: "ran")
    async with harness(tmp_path, tools=[echo], policy=ASK) as h:
        h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="echo", arguments={"x": "risky"}, id="c1")])
        )
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "do it", sender_id="u7", sender_name="Ann")
        pending = (await h.registry.info(sid)).pending_approval
    assert isinstance(result, AwaitingApproval)
    assert pending is not None
    assert pending.requester_id == "u7"
