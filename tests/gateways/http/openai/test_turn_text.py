"""A turn's text is the same streamed and not: every model call's words, a blank line apart."""

from __future__ import annotations

import re
from pathlib import Path

from openai import AsyncOpenAI

from duragent.gateways.http.openai.text import TextSink, TurnText
from duragent.testing import Reply, ToolCallReply
from duragent.turns import Complete
from tests.gateways.http.api_fixtures import served

BASH_TOOL = "  tools:\n    - type: builtin\n      name: bash\n"
TRUSTED = "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: dangerous\n"
ASK = "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: ask\n"


def sdk(port: int | None) -> AsyncOpenAI:
    assert port is not None
    return AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0)


async def _plain(client: AsyncOpenAI, text: str) -> str:
    done = await client.chat.completions.create(
        model="bot", messages=[{"role": "user", "content": text}]
    )
    return done.choices[0].message.content or ""


async def _streamed(client: AsyncOpenAI, text: str) -> str:
    stream = await client.chat.completions.create(
        model="bot", messages=[{"role": "user", "content": text}], stream=True
    )
    chunks = [chunk async for chunk in stream]
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


async def test_a_turn_with_a_tool_call_answers_the_same_text_streamed_or_not(
    tmp_path: Path,
) -> None:
    async with served(tmp_path, tools=BASH_TOOL, policy=TRUSTED) as s:
        answers = []
        async with sdk(s.runtime.http_port) as client:
            for ask in (_plain, _streamed):
                call = ToolCallReply(name="bash", arguments={"command": "echo hi"})
                s.server.enqueue(Reply(text="Let me look.", tool_calls=[call]))
                s.server.enqueue(Reply(text="It says hi."))
                answers.append(await ask(client, "what does echo say?"))
    assert answers == ["Let me look.\n\nIt says hi."] * 2


async def test_the_words_before_a_tool_call_and_after_it_are_a_blank_line_apart(
    tmp_path: Path,
) -> None:
    async with (
        served(tmp_path, tools=BASH_TOOL, policy=TRUSTED) as s,
        sdk(s.runtime.http_port) as client,
    ):
        first = ToolCallReply(name="bash", arguments={"command": "true"})
        second = ToolCallReply(name="bash", arguments={"command": "true"})
        s.server.enqueue(Reply(text="One.\n", tool_calls=[first]))
        s.server.enqueue(Reply(tool_calls=[second]))  # a call with no words: no gap
        s.server.enqueue(Reply(text="Two."))
        streamed = await _streamed(client, "go")
    assert streamed == "One.\n\nTwo."  # the newline already written counts


async def test_an_approval_after_some_words_reads_the_same_streamed_or_not(
    tmp_path: Path,
) -> None:
    async with served(tmp_path, tools=BASH_TOOL, policy=ASK) as s:
        answers = []
        async with sdk(s.runtime.http_port) as client:
            for ask in (_plain, _streamed):
                call = ToolCallReply(name="bash", arguments={"command": "echo hi"}, id="c1")
                s.server.enqueue(Reply(text="I will run it.", tool_calls=[call]))
                answers.append(await ask(client, "run it"))
    plain, streamed = (re.sub(r"session_\w{26}", "session_…", a) for a in answers)
    assert plain == streamed  # in their own sessions
    assert plain.startswith("I will run it.\n\nApproval needed: ")


def test_replies_to_late_messages_are_a_blank_line_apart_in_the_plain_answer() -> None:
    sink = TextSink()
    text = sink.text
    for words in ("First", " reply.", "Let me check.", None, "Second reply."):
        if words is None:
            text.tool_call()  # "Let me check." came with a tool call
        else:
            text.add(words)
    result = Complete(session_id="s", content="Second reply.", earlier=("First reply.",))
    assert sink.content(result) == "First reply.\n\nLet me check.\n\nSecond reply."


def test_a_request_that_ran_no_loop_of_its_own_says_the_reply_that_answered_it() -> None:
    text = TurnText()
    joined = Complete(session_id="s", content="Both.", earlier=("One.",), steered=True)
    assert text.ending(joined) == "One.\n\nBoth."
    assert text.text == "One.\n\nBoth."


def test_a_turn_that_wrote_no_words_has_empty_text_rather_than_an_error() -> None:
    """A retried message whose recorded reply had no words (found as a 500 under three nodes:
    the text of no parts raised)."""
    text = TurnText()
    assert text.text == ""
    text.add("")
    assert text.text == ""
