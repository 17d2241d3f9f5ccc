"""A Discord conversation end to end: what the contract suites do not say about Discord.

A real ``discord.Client`` (the gateway) against ``FakeDiscord``: typing and quoting, mentions
written as ``<@id>``, threads, long replies with code, rate limits, reconnects and the bot's
own messages. Users act through the fake's websocket; the tests read what Discord was asked.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest

from duragent.frontkit.outbox import UNDELIVERED
from duragent.frontkit.queue import TURN_FAILED
from duragent.observability.metrics import Metrics
from duragent.testing import Reply
from duragent.testing.discord_objects import Person
from tests.context.quoted_wire import quoted_texts, spoken
from tests.frontkit.chat_contract_kit import ChatSetup
from tests.gateways.discord.discord_chat import GROUP_ID, discord_chat
from tests.polling import eventually

ANN = Person(1001, "ann", global_name="Ann")
BOB = Person(1002, "bob", nick="Bobby")
DM = 1001
GROUP = int(GROUP_ID)
THREAD = 300
OPEN_GROUP = {"groups": {"policy": "open"}}
FENCE = re.compile(r"^```", re.MULTILINE)


def users(request_json: dict[str, Any]) -> list[str]:
    """What people said in the request (the runtime's quoted context blocks left out)."""
    return spoken(request_json["messages"])


async def test_a_direct_message_shows_typing_then_one_reply_quoting_it(tmp_path: Path) -> None:
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        chat.llm.enqueue(Reply(text="Hello Ann."))
        asked = await chat.push(DM, "hello", ANN)
        await chat.settle()
        paths = [(c.method, c.path) for c in chat.dc.calls() if c.path.startswith("/channels")]
        sent = chat.dc.sent(DM)
    assert paths == [("POST", f"/channels/{DM}/typing"), ("POST", f"/channels/{DM}/messages")]
    assert [m["content"] for m in sent] == ["Hello Ann."]
    assert sent[0]["message_reference"]["message_id"] == asked["id"]
    assert users(chat.llm.requests[-1].json) == ["hello"]
    assert len(chat.llm.requests) == 1  # the bot's own message, echoed back, is not a turn


async def test_a_mention_in_the_text_triggers_and_reads_as_names(tmp_path: Path) -> None:
    async with discord_chat(tmp_path, ChatSetup(access=OPEN_GROUP)) as chat:
        chat.llm.enqueue(Reply(text="Sure."))
        bot = chat.dc.bot
        await chat.push(GROUP, "lunch, <@1002>?", ANN, mentions=[BOB])  # not the bot
        await chat.push(GROUP, f"<@{bot.id}> ask <@1002> and <@{bot.id}>", ANN, mentions=[bot, BOB])
        await chat.settle()
        prompt = chat.llm.requests[-1].json
        assert [m["content"] for m in chat.dc.sent(GROUP)] == ["Sure."]
    assert users(prompt) == ["Ann: ask @Bobby and @duragent_bot"]
    assert "\n> Ann: lunch, @Bobby?" in quoted_texts(prompt)[-1]  # the silent buffer, quoted
    assert "lunch" not in prompt["messages"][0]["content"]  # never as system text (issue 33)


async def test_a_bare_mention_reaches_the_model_as_the_bots_name(tmp_path: Path) -> None:
    async with discord_chat(tmp_path, ChatSetup(access=OPEN_GROUP)) as chat:
        chat.llm.enqueue(Reply(text="Hi!"))
        await chat.push(GROUP, f"<@{chat.dc.bot.id}>", ANN, mentions=[chat.dc.bot])
        await chat.settle()
        assert [m["content"] for m in chat.dc.sent(GROUP)] == ["Hi!"]
    assert users(chat.llm.requests[-1].json) == ["Ann: @duragent_bot"]


async def test_a_reply_to_the_bot_triggers_without_a_mention(tmp_path: Path) -> None:
    async with discord_chat(tmp_path, ChatSetup(access=OPEN_GROUP)) as chat:
        chat.llm.enqueue(Reply(text="First."), Reply(text="Second."))
        await chat.push(GROUP, f"<@{chat.dc.bot.id}> hi", ANN, mentions=[chat.dc.bot])
        await chat.settle()
        answer = int(chat.dc.sent(GROUP)[0]["id"])
        await chat.push(GROUP, "and then?", BOB, reply_to=answer)
        await chat.settle()
        assert [m["content"] for m in chat.dc.sent(GROUP)] == ["First.", "Second."]


async def test_a_thread_is_a_group_chat_of_its_own(tmp_path: Path) -> None:
    access = {"groups": {"activation": "always"}}
    async with discord_chat(tmp_path, ChatSetup(access=access)) as chat:
        await chat.dc.add_channel(THREAD, thread_of=GROUP)
        chat.llm.enqueue(Reply(text="In the thread."))
        await chat.push(THREAD, "a thread question", ANN)
        await chat.settle()
        assert [m["content"] for m in chat.dc.sent(THREAD)] == ["In the thread."]
        assert chat.dc.sent(GROUP) == []
        assert chat.registry.sessions_of_chat("discord", str(THREAD)) != []
        assert users(chat.llm.requests[-1].json) == ["Ann: a thread question"]


async def test_a_long_reply_with_code_is_split_without_breaking_a_block(tmp_path: Path) -> None:
    code = "\n".join(f"print({i})" for i in range(400))
    reply = "Here is the script:\n\n```python\n" + code + "\n```\n\nRun it."
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        chat.llm.enqueue(Reply(text=reply))
        await chat.push(DM, "write a script", ANN)
        await chat.settle()
        sent = chat.dc.sent(DM)
    assert len(sent) >= 3
    assert all(len(m["content"]) <= 2000 for m in sent)
    assert all(len(FENCE.findall(m["content"])) % 2 == 0 for m in sent)
    lines = [ln for m in sent for ln in m["content"].splitlines() if ln.startswith("print(")]
    assert lines == code.splitlines()
    assert "message_reference" in sent[0]
    assert all("message_reference" not in m for m in sent[1:])


async def test_the_model_cannot_ping_everyone(tmp_path: Path) -> None:
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        chat.llm.enqueue(Reply(text="@everyone look <@1002>"))
        await chat.push(DM, "announce it", ANN)
        await chat.settle()
        (call,) = chat.dc.calls("POST", f"/channels/{DM}/messages")
    assert call.body["allowed_mentions"] == {"parse": [], "replied_user": True}


async def test_a_rate_limited_send_is_waited_out_by_discord_py_and_sent_once(
    tmp_path: Path,
) -> None:
    metrics = Metrics()
    async with discord_chat(tmp_path, ChatSetup(), metrics) as chat:
        chat.dc.rate_limit("POST", f"/channels/{DM}/messages", 0.2)
        chat.llm.enqueue(Reply(text="Patience."))
        await chat.push(DM, "hi", ANN)
        await chat.settle()
        statuses = [c.status for c in chat.dc.calls("POST", f"/channels/{DM}/messages")]
        assert statuses == [429, 200]
        assert [m["content"] for m in chat.dc.sent(DM)] == ["Patience."]
    # discord.py waited it out itself; /metrics still counts it (its log line says so)
    counted = metrics.registry.get_sample_value
    assert counted("duragent_gateway_rate_limited_total", {"gateway": "discord"}) == 1
    assert counted("duragent_gateway_retries_total", {"gateway": "discord"}) == 1


async def test_after_a_dropped_connection_the_bot_resumes_and_answers(tmp_path: Path) -> None:
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        await chat.dc.disconnect()
        assert await eventually(
            lambda: chat.dc.gateway.resumed == 1 and chat.dc.gateway.connected == 1
        )
        assert await eventually(lambda: chat.gateway.state == "running")
        chat.llm.enqueue(Reply(text="Back."))
        await chat.push(DM, "still there?", ANN)
        await chat.settle()
        assert [m["content"] for m in chat.dc.sent(DM)] == ["Back."]


async def test_a_message_written_while_the_connection_was_down_is_replayed_and_answered(
    tmp_path: Path,
) -> None:
    """Discord keeps a session's events for a RESUME (a starved loop's dropped connection)."""
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        chat.llm.enqueue(Reply(text="Caught up."))
        await chat.dc.disconnect()
        await chat.push(DM, "are you there?", ANN)  # before discord.py is back
        assert await eventually(lambda: chat.dc.gateway.resumed == 1)
        await chat.settle()
        assert [m["content"] for m in chat.dc.sent(DM)] == ["Caught up."]
        assert chat.dc.gateway.replayed >= 1


async def test_messages_of_one_chat_are_recorded_in_the_order_they_were_written(
    tmp_path: Path,
) -> None:
    access = {"groups": {"policy": "open", "context_buffer": {"mode": "passive"}}}
    async with discord_chat(tmp_path, ChatSetup(access=access)) as chat:
        for i in range(20):
            await chat.dc.push_message(GROUP, f"note {i}", ANN if i % 2 else BOB)  # a burst
        assert await eventually(lambda: chat.gateway.taken == 20)
        sid = await chat.registry.chat_session(("discord", GROUP_ID, "bot"))
        assert sid is not None
        events = await chat.registry.handle(sid).events()
    texts = [e.data["content"] for e in events if e.type == "user_message"]
    assert [t.split(": ", 1)[1] for t in texts] == [f"note {i}" for i in range(20)]


async def test_a_token_revoked_while_connected_fails_the_gateway_with_a_clear_state(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        await chat.dc.disconnect(code=4004)  # Discord: "Authentication failed"
        assert await eventually(lambda: chat.gateway.state.startswith("failed: "))
        assert chat.gateway.state == "failed: Discord rejected the bot token"
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("gateways.discord.bot_token" in m for m in errors), errors


async def test_a_reply_discord_refused_is_delivered_once_at_the_next_start(tmp_path: Path) -> None:
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        chat.dc.refuse("POST", f"/channels/{DM}/messages")  # the reply; the notice goes out
        chat.llm.enqueue(Reply(text="Written, not yet delivered."))
        await chat.push(DM, "hello", ANN)
        await chat.settle()
        # the answer exists: the person is told it was not delivered, not asked to write again
        assert [m["content"] for m in chat.dc.sent(DM)] == [UNDELIVERED]
        await chat.restart()  # recovery, once READY: the written reply is delivered
        await chat.settle()
        await chat.restart()  # and only once
        await chat.settle()
        sent = [m["content"] for m in chat.dc.sent(DM)]
    assert sent == [UNDELIVERED, "Written, not yet delivered."]
    assert TURN_FAILED not in sent
    assert len(chat.llm.requests) == 1


async def test_a_reply_discord_rate_limits_past_its_own_retries_is_waited_out_and_sent_once(
    tmp_path: Path,
) -> None:
    """discord.py gives up after five 429s; the kit's outbox waits on, in the chat's order."""
    async with discord_chat(tmp_path, ChatSetup()) as chat:
        chat.dc.rate_limit("POST", f"/channels/{DM}/messages", *[0.05] * 7)
        chat.llm.enqueue(Reply(text="Patience."), Reply(text="And the second."))
        await chat.push(DM, "hi", ANN)
        limited = lambda: [  # noqa: E731
            c for c in chat.dc.calls("POST", f"/channels/{DM}/messages") if c.status == 429
        ]
        assert await eventually(lambda: len(limited()) >= 5)  # discord.py has given up
        await chat.push(DM, "and another thing", ANN)  # recorded; answered after the first
        assert await eventually(lambda: len(chat.dc.sent(DM)) == 2)
        await chat.settle()
        sent = [m["content"] for m in chat.dc.sent(DM)]
    assert sent == ["Patience.", "And the second."]
    assert len(limited()) == 7
