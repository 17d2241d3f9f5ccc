"""The chat contract: what every chat adapter must do, written once and run per adapter.

This module: replies, routing, access, dispositions, mention gating, the context buffer and
slash commands; ``contract_approvals`` holds the approval buttons.

Each test takes ``open_chat``, a fixture the *including* module provides: a callable that
opens a ``ChatDriver`` (``chat_contract_kit``) for a ``ChatSetup``. ``test_chat_contract.py``
runs the suites with the "memory adapter" (``ChatFront`` + ``MemoryOutbound``); a platform
adapter's test module star-imports ``contract_chat`` and ``contract_approvals`` (or takes them
with its own gateway name and ids from ``chat_contract_kit.contract_tests``, as Discord does)
and provides ``open_chat`` over its platform, and the same tables run unchanged.

The tables are the reference's rules (digest §1.5, §1.9, §5.1, §5.2) with its defects fixed:
the context buffer survives a restart, commands come after access control, approvals in a
chat are the requester's, and a button still works after a restart.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from duragent.context.quoting import quoted_block
from duragent.frontkit import ChatRef, Sender
from duragent.frontkit.gateway import NON_TEXT_REPLY
from duragent.testing import Reply
from tests.context.quoted_wire import quoted_texts, spoken
from tests.frontkit.chat_contract_kit import (
    ANN,
    BOB,
    DM,
    EVE,
    GATEWAY,
    GROUP,
    OTHER_GATEWAY,
    ChatSetup,
    OpenChat,
    last_prompt,
    recorded_attachments,
    said,
    session_events,
)

# --- replies --------------------------------------------------------------------------------


async def test_a_direct_message_is_answered_once(open_chat: OpenChat) -> None:
    async with open_chat(ChatSetup()) as chat:
        chat.llm.enqueue(Reply(text="Hello Ann."))
        msg = said(DM, "hi")
        await chat.message(msg)
        await chat.message(msg)  # the platform redelivers it
        await chat.settle()
        assert chat.texts(DM) == ["Hello Ann."]
        quoted = msg.message_id if chat.quotes_in_direct_messages else None
        assert chat.replies_to(DM) == [quoted]
        assert last_prompt(chat)[-1] == {"role": "user", "content": "hi"}


async def test_a_group_message_reaches_the_model_labelled_with_its_sender(
    open_chat: OpenChat,
) -> None:
    async with open_chat(ChatSetup(access={"groups": {"activation": "always"}})) as chat:
        chat.llm.enqueue(Reply(text="a"), Reply(text="b"), Reply(text="c"))
        for sender in (ANN, BOB, EVE):
            await chat.message(said(GROUP, "hello", sender))
            await chat.settle()
        users = spoken(last_prompt(chat))
        assert users == ["Ann: hello", "bob: hello", "1003: hello"]


@pytest.mark.parametrize("caption", ["look at this", "   ", None])
async def test_a_photo_is_taken_in_and_answered_with_or_without_a_caption(
    open_chat: OpenChat, caption: str | None
) -> None:
    async with open_chat(ChatSetup()) as chat:
        chat.llm.enqueue(Reply(text="a nice photo"))
        await chat.message(said(DM, caption, kind="photo"))
        await chat.settle()
        assert chat.texts(DM) == ["a nice photo"]
        assert len(chat.llm.requests) == 1
        if caption and caption.strip():
            assert caption in json.dumps(last_prompt(chat)[-1])
        [kept] = await recorded_attachments(chat, DM)
        assert (kept["kind"], kept["mime"]) == ("image", "image/png")


async def test_other_non_text_messages_are_answered_politely(open_chat: OpenChat) -> None:
    async with open_chat(ChatSetup()) as chat:
        await chat.message(said(DM, None, kind="sticker"))
        await chat.settle()
        assert chat.texts(DM) == [NON_TEXT_REPLY]
        assert chat.llm.requests == []


async def test_non_text_in_a_group_is_answered_only_when_it_addresses_the_bot(
    open_chat: OpenChat,
) -> None:
    async with open_chat(ChatSetup(access={"groups": {"activation": "always"}})) as chat:
        await chat.message(said(GROUP, None, kind="sticker"))
        await chat.message(said(GROUP, None, kind="sticker", mention=True))
        await chat.settle()
        assert chat.texts(GROUP) == [NON_TEXT_REPLY]
        assert await session_events(chat, GROUP) == ["session_start"]


# --- routing --------------------------------------------------------------------------------

TWO_AGENTS = ("bot", "helper")


@pytest.mark.parametrize(
    ("routes", "agents", "chat_ref", "sender", "agent"),
    [
        ([], ("bot",), DM, ANN, "bot"),  # one agent, no routes: it answers everything
        ([], TWO_AGENTS, DM, ANN, None),  # several and no routes: nobody is picked
        ([{"match": {"chat_type": "GROUP"}, "agent": "helper"}], TWO_AGENTS, GROUP, ANN, "helper"),
        ([{"match": {"chat_type": "group"}, "agent": "helper"}], TWO_AGENTS, DM, ANN, None),
        (
            [
                {"match": {"sender_id": BOB.id}, "agent": "helper"},
                {"match": {"gateway": GATEWAY.upper()}, "agent": "bot"},
            ],
            TWO_AGENTS,
            DM,
            BOB,
            "helper",
        ),
        (
            [{"match": {}, "agent": "ghost"}, {"match": {"chat_id": DM.chat_id}, "agent": "bot"}],
            TWO_AGENTS,
            DM,
            ANN,
            "bot",
        ),
        ([{"match": {"gateway": OTHER_GATEWAY}, "agent": "bot"}], TWO_AGENTS, DM, ANN, None),
    ],
)
async def test_routes_pick_the_agent_and_an_unrouted_message_is_dropped(
    open_chat: OpenChat,
    routes: list[dict[str, Any]],
    agents: tuple[str, ...],
    chat_ref: ChatRef,
    sender: Sender,
    agent: str | None,
) -> None:
    setup = ChatSetup(routes=routes, agents=agents, access={"groups": {"activation": "always"}})
    async with open_chat(setup) as chat:
        chat.llm.enqueue(Reply(text="routed"))
        await chat.message(said(chat_ref, "hi", sender))
        await chat.settle()
        served = [a for a, _ in chat.registry.sessions_of_chat(chat_ref.gateway, chat_ref.chat_id)]
        if agent is None:
            assert chat.texts(chat_ref) == []
            assert served == []
        else:
            assert chat.texts(chat_ref) == ["routed"]
            assert served == [agent]


# --- access, dispositions, mention gating ---------------------------------------------------

OPEN_GROUP = {"groups": {"policy": "open"}}


@pytest.mark.parametrize(
    ("access", "chat_ref", "sender", "mention", "outcome"),
    [
        (None, DM, ANN, False, "answered"),
        (None, GROUP, ANN, False, "buffered"),  # no access block: answered when addressed
        (None, GROUP, ANN, True, "answered"),
        ({"dm": {"policy": "disabled"}}, DM, ANN, False, "dropped"),
        ({"dm": {"policy": "allowlist", "allowlist": ["1001"]}}, DM, ANN, False, "answered"),
        ({"dm": {"policy": "allowlist", "allowlist": ["1001"]}}, DM, BOB, False, "dropped"),
        ({"dm": {"policy": "allowlist", "allowlist": ["100*"]}}, DM, BOB, False, "answered"),
        ({"groups": {"policy": "disabled"}}, GROUP, ANN, True, "dropped"),
        (
            {"groups": {"policy": "allowlist", "allowlist": [f"{GATEWAY}:{GROUP.chat_id}"]}},
            GROUP,
            ANN,
            True,
            "answered",
        ),
        (
            {"groups": {"policy": "allowlist", "allowlist": [f"{OTHER_GATEWAY}:*"]}},
            GROUP,
            ANN,
            True,
            "dropped",
        ),
        (
            {"groups": {"policy": "allowlist", "allowlist": [f"{GATEWAY}:*"]}},
            GROUP,
            ANN,
            True,
            "answered",
        ),
        (OPEN_GROUP, GROUP, ANN, True, "answered"),
        (OPEN_GROUP, GROUP, ANN, False, "buffered"),  # mention gating, silent buffer
        (
            {"groups": {"context_buffer": {"mode": "passive"}}},
            GROUP,
            ANN,
            False,
            "recorded",
        ),
        ({"groups": {"activation": "always"}}, GROUP, ANN, False, "answered"),
        ({"groups": {"sender_overrides": {"1001": "block"}}}, GROUP, ANN, True, "dropped"),
        ({"groups": {"sender_overrides": {"1001": "silent"}}}, GROUP, ANN, True, "buffered"),
        ({"groups": {"sender_overrides": {"1001": "passive"}}}, GROUP, ANN, True, "recorded"),
        (
            {"groups": {"sender_overrides": {"10*": "block", "100*": "allow"}}},
            GROUP,
            ANN,
            True,
            "answered",  # the longest wildcard wins
        ),
        (
            {"groups": {"sender_overrides": {"1001": "allow", "100*": "block"}}},
            GROUP,
            ANN,
            True,
            "answered",  # an exact entry beats any wildcard
        ),
        ({"groups": {"sender_default": "block"}}, GROUP, ANN, True, "dropped"),
        ({"groups": {"sender_default": "block"}}, DM, ANN, False, "answered"),  # groups only
    ],
)
async def test_access_dispositions_and_mention_gating(
    open_chat: OpenChat,
    access: dict[str, Any] | None,
    chat_ref: ChatRef,
    sender: Sender,
    mention: bool,
    outcome: str,
) -> None:
    async with open_chat(ChatSetup(access=access)) as chat:
        chat.llm.enqueue(Reply(text="answer"))
        await chat.message(said(chat_ref, "hello there", sender, mention=mention))
        await chat.settle()
        events = await session_events(chat, chat_ref)
        assert chat.texts(chat_ref) == (["answer"] if outcome == "answered" else [])
        expected = {
            "answered": ("user_message", "assistant_response"),
            "buffered": ("silent_message",),
            "recorded": ("user_message",),
            "dropped": (),
        }[outcome]
        assert tuple(t for t in events if t not in ("session_start", "delivery")) == expected


async def test_a_reply_to_the_bot_triggers_like_a_mention(open_chat: OpenChat) -> None:
    async with open_chat(ChatSetup(access=OPEN_GROUP)) as chat:
        chat.llm.enqueue(Reply(text="yes?"))
        await chat.message(said(GROUP, "and you?", reply_to_bot=True))
        await chat.settle()
        assert chat.texts(GROUP) == ["yes?"]


async def test_chatter_before_a_mention_is_given_to_that_turn_and_kept_out_of_history(
    open_chat: OpenChat,
) -> None:
    async with open_chat(ChatSetup(access=OPEN_GROUP)) as chat:
        chat.llm.enqueue(Reply(text="The build broke at 9."), Reply(text="ok"))
        await chat.message(said(GROUP, "the build is red", ANN))
        await chat.message(said(GROUP, "since 9", BOB))
        await chat.message(said(GROUP, "what happened?", EVE, mention=True))
        await chat.settle()
        prompt = last_prompt(chat)
        assert prompt[-2] == {  # quoted, right before the mention: people wrote it (issue 33)
            "role": "user",
            "content": quoted_block(
                [
                    (
                        "",
                        "Recent group conversation before you were mentioned:\n\n"
                        "Ann: the build is red\nbob: since 9\n",
                    )
                ]
            ),
        }
        assert "the build is red" not in prompt[0]["content"]
        assert spoken(prompt) == ["1003: what happened?"]
        await chat.message(said(GROUP, "thanks", EVE, mention=True))
        await chat.settle()
        history = spoken(last_prompt(chat)) + [
            m["content"] for m in last_prompt(chat) if m["role"] == "assistant"
        ]
        assert all("the build is red" not in str(c) for c in history)
        assert chat.texts(GROUP) == ["The build broke at 9.", "ok"]


async def test_the_context_buffer_survives_a_restart(open_chat: OpenChat) -> None:
    async with open_chat(ChatSetup(access=OPEN_GROUP)) as chat:
        chat.llm.enqueue(Reply(text="noted"))
        await chat.message(said(GROUP, "deploy at 5", ANN))
        await chat.restart()
        await chat.message(said(GROUP, "when is the deploy?", BOB, mention=True))
        await chat.settle()
        assert "\n> Ann: deploy at 5" in quoted_texts({"messages": last_prompt(chat)})[-1]


async def test_a_passive_member_is_heard_in_later_turns_but_never_answered(
    open_chat: OpenChat,
) -> None:
    access = {"groups": {"sender_overrides": {ANN.id: "passive"}}}
    async with open_chat(ChatSetup(access=access)) as chat:
        chat.llm.enqueue(Reply(text="Ann said hi."))
        await chat.message(said(GROUP, "hi all", ANN, mention=True))
        await chat.message(said(GROUP, "what did Ann say?", BOB, mention=True))
        await chat.settle()
        users = spoken(last_prompt(chat))
        assert users == ["Ann: hi all", "bob: what did Ann say?"]
        assert chat.texts(GROUP) == ["Ann said hi."]


async def test_a_passive_message_after_the_last_answer_is_owed_nothing(
    open_chat: OpenChat,
) -> None:
    """Recorded to be read, not to be answered: a restart's recovery must not answer it, and
    it must not keep the session from its TTL as a message waiting for an answer would."""
    access = {"groups": {"sender_overrides": {ANN.id: "passive"}}}
    async with open_chat(ChatSetup(access=access)) as chat:
        chat.llm.enqueue(Reply(text="hello bob"))
        await chat.message(said(GROUP, "hi bot", BOB, mention=True))
        await chat.settle()
        await chat.message(said(GROUP, "and hello from me", ANN, mention=True))
        await chat.settle()
        session_id = await chat.registry.chat_session((GATEWAY, GROUP.chat_id, "bot"))
        assert session_id is not None
        info = await chat.registry.info(session_id)
    assert not info.awaits_answer
    assert info.message_count == 3  # Ann's message is in the conversation


# --- slash commands -------------------------------------------------------------------------

STATUS = re.compile(
    r"Session: \S+\nAgent: bot\nStatus: Active\nCreated: \d{4}-\d\d-\d\d \d\d:\d\d UTC"
)


async def test_status_and_reset_answer_with_the_reference_texts(open_chat: OpenChat) -> None:
    async with open_chat(ChatSetup()) as chat:
        chat.llm.enqueue(Reply(text="first"), Reply(text="second"))
        await chat.message(said(DM, "/status"))
        await chat.message(said(DM, "/reset"))
        await chat.message(said(DM, "hello"))
        await chat.settle()
        before = await chat.registry.chat_session((GATEWAY, DM.chat_id, "bot"))
        await chat.message(said(DM, " /status "))
        await chat.message(said(DM, "/reset"))
        await chat.message(said(DM, "hello again"))
        await chat.settle()
        after = await chat.registry.chat_session((GATEWAY, DM.chat_id, "bot"))
        texts = chat.texts(DM)
    assert texts[:3] == ["No active session.", "No active session to reset.", "first"]
    assert STATUS.fullmatch(texts[3]), texts[3]
    assert texts[3].startswith(f"Session: {before}\n")
    assert texts[4:] == ["Session reset. Send a message to start a new conversation.", "second"]
    assert after is not None
    assert after != before
    assert chat.llm.requests[-1].json["messages"][-1]["content"] == "hello again"
    assert len(spoken(chat.llm.requests[-1].json["messages"])) == 1


async def test_pin_keeps_a_text_in_every_request_and_unpin_removes_it(
    open_chat: OpenChat,
) -> None:
    async with open_chat(ChatSetup()) as chat:
        chat.llm.enqueue(Reply(text="first"), Reply(text="second"))
        await chat.message(said(DM, "/pin The budget is 40 EUR."))
        await chat.message(said(DM, "plan a trip"))
        await chat.settle()
        pinned = chat.llm.requests[-1].json["messages"]
        pin_id = chat.texts(DM)[0].split("(")[1].split(")")[0]
        await chat.message(said(DM, f"/unpin {pin_id}"))
        await chat.message(said(DM, "and now?"))
        await chat.settle()
        texts = chat.texts(DM)
    assert texts[0].startswith("Pinned (pin_")
    assert any("The budget is 40 EUR." in str(m.get("content")) for m in pinned)
    assert texts[1:] == ["first", "Unpinned.", "second"]
    assert "40 EUR" not in str(chat.llm.requests[-1].json["messages"])


@pytest.mark.parametrize(
    ("text", "is_command"),
    [
        ("/status@duragent_bot", True),
        ("/status@DURAGENT_BOT", True),
        ("/status@other_bot", False),
        ("/status now", False),
        ("/weather", False),
        ("status", False),
    ],
)
async def test_commands_addressed_elsewhere_and_unknown_ones_go_to_the_model(
    open_chat: OpenChat, text: str, is_command: bool
) -> None:
    async with open_chat(ChatSetup()) as chat:
        chat.llm.enqueue(Reply(text="from the model"))
        await chat.message(said(DM, text))
        await chat.settle()
        expected = "No active session." if is_command else "from the model"
        assert chat.texts(DM) == [expected]


@pytest.mark.parametrize(
    ("access", "sender", "runs"),
    [
        ({"groups": {"sender_overrides": {"1002": "silent"}}}, BOB, False),
        ({"groups": {"sender_overrides": {"1002": "passive"}}}, BOB, False),
        ({"groups": {"sender_overrides": {"1002": "block"}}}, BOB, False),
        ({"groups": {"policy": "disabled"}}, ANN, False),
        (OPEN_GROUP, BOB, True),
    ],
)
async def test_commands_are_checked_after_access_control(
    open_chat: OpenChat, access: dict[str, Any], sender: Sender, runs: bool
) -> None:
    async with open_chat(ChatSetup(access=access)) as chat:
        await chat.message(said(GROUP, "/reset@duragent_bot", sender, mention=True))
        await chat.settle()
        assert chat.texts(GROUP) == (["No active session to reset."] if runs else [])
