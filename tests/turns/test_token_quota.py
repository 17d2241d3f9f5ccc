"""``tokens_per_chat_per_day`` (issue 33): a chat that spent its tokens today gets no model call.

The turn is refused before calling the model, with a reply naming the limit and the field;
the person's message stays in the history; the next UTC day the chat is answered again (and
the model sees the message). Today's total survives a restart; the operator's sessions (no
chat) are not limited.
"""

from __future__ import annotations

from pathlib import Path

from duragent.core.events import EventType
from duragent.testing import Reply, ToolCallReply
from duragent.turns import Complete
from duragent.turns.token_quota import TOKEN_FIELD, token_refusal
from tests.conftest import Calendar
from tests.turns.turn_fixtures import FnTool, harness

QUOTA = "  access:\n    quotas:\n      tokens_per_chat_per_day: 100\n"


def costly(text: str) -> Reply:
    return Reply(text=text, prompt_tokens=60, completion_tokens=50)


async def test_a_chat_over_its_daily_tokens_is_refused_until_the_next_day(
    tmp_path: Path, calendar: Calendar
) -> None:
    async with harness(tmp_path, model_extra=QUOTA) as h:
        h.server.enqueue(costly("first answer"))
        sid = await h.runner.session_for_chat("telegram", "42", "bot")
        first = await h.runner.run(sid, "hello", sender_id="7")
        assert first.content == "first answer"
        refused = await h.runner.run(sid, "and another thing", sender_id="7")
        assert isinstance(refused, Complete)
        assert refused.content == token_refusal(100)
        assert refused.content == (
            f"This chat has used its 100 model tokens for today ({TOKEN_FIELD}), so I cannot "
            "answer until tomorrow (UTC). Your message is kept: write again then and I will "
            f"see it. The agent's owner can raise {TOKEN_FIELD} in its agent.yaml."
        )
        assert len(h.server.requests) == 1  # no model call
        events = await h.registry.handle(sid).events()
        users = [e.data["content"] for e in events if e.type == EventType.USER_MESSAGE]
        assert users == ["hello", "and another thing"]
    async with harness(tmp_path, model_extra=QUOTA) as h:  # after a restart: still spent
        sid = await h.runner.session_for_chat("telegram", "42", "bot")
        again = await h.runner.run(sid, "please?", sender_id="7")
        assert again.content == token_refusal(100)
        assert h.server.requests == []
        calendar.advance(days=1)
        h.server.enqueue(costly("a new day"))
        answered = await h.runner.run(sid, "good morning", sender_id="7")
        assert answered.content == "a new day"
        sent = str(h.server.requests[0].body)
        assert "and another thing" in sent  # the refused message reached the model today
        assert "good morning" in sent


async def test_a_turn_stops_calling_the_model_once_the_quota_is_spent_mid_turn(
    tmp_path: Path, calendar: Calendar
) -> None:
    tool = FnTool("look", lambda args: "found")
    async with harness(tmp_path, model_extra=QUOTA, tools=[tool]) as h:
        h.server.enqueue(
            Reply(tool_calls=[ToolCallReply(name="look", arguments={"x": "a"})],
                  prompt_tokens=90, completion_tokens=20),
            costly("never asked"),
        )  # fmt: skip
        sid = await h.runner.session_for_chat("telegram", "42", "bot")
        result = await h.runner.run(sid, "look it up", sender_id="7")
        assert result.content == token_refusal(100)
        assert len(h.server.requests) == 1
        assert tool.calls == [{"x": "a"}]  # the call the model made still ran and is recorded


async def test_the_operators_sessions_are_not_limited(tmp_path: Path, calendar: Calendar) -> None:
    async with harness(tmp_path, model_extra=QUOTA) as h:
        sid = await h.runner.start_session("bot")
        for n in range(3):
            h.server.enqueue(costly(f"answer {n}"))
            result = await h.runner.run(sid, f"question {n}")
            assert result.content == f"answer {n}"
        assert len(h.server.requests) == 3


async def test_a_reset_does_not_renew_a_chats_spent_tokens(
    tmp_path: Path, calendar: Calendar
) -> None:
    """Found in review: ``/reset`` (or a TTL end) started a session with a fresh count."""
    async with harness(tmp_path, model_extra=QUOTA) as h:
        h.server.enqueue(costly("first answer"))
        sid = await h.runner.session_for_chat("telegram", "42", "bot")
        await h.runner.run(sid, "hello", sender_id="7")
        assert await h.registry.end_chat(("telegram", "42", "bot")) == sid  # what /reset does
        fresh = await h.runner.session_for_chat("telegram", "42", "bot")
        assert fresh != sid
        refused = await h.runner.run(fresh, "again", sender_id="7")
        assert refused.content == token_refusal(100)
        assert len(h.server.requests) == 1
        calendar.advance(days=1)
        h.server.enqueue(costly("a new day"))
        assert (await h.runner.run(fresh, "morning", sender_id="7")).content == "a new day"
