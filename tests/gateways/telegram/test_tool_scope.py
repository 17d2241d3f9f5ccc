"""Over Telegram end to end: a DM's conversation stays out of another DM's ``session`` tool.

The bot answers two people in DMs (``dm.policy: allowlist``). Alice tells it a secret; then
Bob's turn has the scripted model call ``session list`` and ``session read`` of Alice's
session: both come back empty-handed, and nothing of Alice's DM reaches Bob's model or chat.
"""

from __future__ import annotations

import json
from pathlib import Path

from duragent.testing import Reply, ToolCallReply
from tests.gateways.telegram.rig import telegram_rig

ALICE, BOB = 100, 200
SECRET = "my bank PIN is 4921"
ALLOW_ALL = "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: dangerous\n"


def session_call(call_id: str, **arguments: str) -> Reply:
    return Reply(tool_calls=[ToolCallReply(name="session", arguments=arguments, id=call_id)])


async def test_a_dm_is_neither_listed_nor_read_by_another_dms_session_tool(
    tmp_path: Path,
) -> None:
    access = {"dm": {"policy": "allowlist", "allowlist": [str(ALICE), str(BOB)]}}
    tools = [{"type": "builtin", "name": "session"}]
    async with telegram_rig(tmp_path, access=access, tools=tools, policy=ALLOW_ALL) as rig:
        rig.tg.push_message(ALICE, SECRET, user_id=ALICE, first_name="Alice")
        assert await rig.replies(ALICE) == [f"re: {SECRET}"]
        await rig.settle()
        queries = rig.runtime.turns.sessions
        chat = await queries.sessions_of_chat_now("telegram", str(ALICE))
        (alices,) = [sid for _agent, sid in chat]
        rig.llm.enqueue(
            session_call("c1", action="list"),
            session_call("c2", action="read", session_id=alices),
            Reply(text="Nothing to tell."),
        )
        asked = len(rig.llm.requests)
        rig.tg.push_message(BOB, "what did others tell you?", user_id=BOB, first_name="Bob")
        assert await rig.replies(BOB) == ["Nothing to tell."]
        await rig.settle()
    bobs_model_saw = [r.json for r in rig.llm.requests[asked:]]
    results = [m for m in bobs_model_saw[-1]["messages"] if m["role"] == "tool"]
    assert [str(m["content"]) for m in results] == [
        "No other sessions",
        f"session {alices!r} not found",
    ]
    assert SECRET not in json.dumps(bobs_model_saw)
    assert str(tmp_path) not in json.dumps(bobs_model_saw)
    assert all(SECRET not in text for text in rig.tg.sent_messages(BOB))
