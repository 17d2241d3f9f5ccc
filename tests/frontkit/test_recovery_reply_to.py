"""A recovered reply quotes the message it answers, though its turn paused for an approval.

The turn asked for approval (the prompt reached the chat, and its delivery was recorded),
the requester allowed the call, the turn went on and wrote its reply; the process died
before the chat got it. Recovery sends the reply, and must send it as a reply to the message
that started the turn. Before, it looked for that message only after the last delivery (the
prompt's), found none and sent the reply quoting nothing: in a DM the person could not tell
what it answered, and the month of strangers (issue 40) counted the message unanswered.
"""

from __future__ import annotations

from pathlib import Path

from duragent.testing import Reply, ToolCallReply
from duragent.turns import AwaitingApproval, Complete
from tests.frontkit.test_recovery import CHAT, recovery_kit
from tests.turns.test_approval import ASK
from tests.turns.turn_fixtures import FnTool


async def test_a_reply_an_approval_let_go_on_is_recovered_as_a_reply_to_its_message(
    tmp_path: Path,
) -> None:
    tool = FnTool("echo", lambda args: "ok")
    async with recovery_kit(tmp_path, tools=[tool], policy=ASK) as kit:
        kit.h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="echo", arguments={"x": "hi"}, id="c1")]),
            Reply(text="It said ok."),
        )
        sid = await kit.session()
        asked = await kit.h.runner.run(sid, "run echo", platform_message_id="p1", sender_id="u1")
        assert isinstance(asked, AwaitingApproval)
        await kit.chat.delivery.deliver(CHAT, asked)  # the prompt reached the chat
        result = await kit.h.runner.approve(sid, "c1", "allow_once")
        assert isinstance(result, Complete)  # written; then SIGKILL before the chat got it
        await kit.h.registry.stop(sid)
        assert await kit.recover() == (1, 0)
    assert kit.replies() == [("p1", "It said ok.")]
