"""The session tool lists and reads sibling sessions through the SessionReader port."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from duragent.core.caller import OPERATOR, Caller, ChatRef
from duragent.errors import NotFoundError
from duragent.session import NewSession, SessionRegistry
from duragent.session.reader import RegistrySessionReader
from duragent.store import SessionStore
from duragent.tools.base import SessionReader, SessionSummary, ToolContext
from duragent.tools.session_tool import SessionTool


class FakeSessions:
    """A SessionReader over fixed data, recording what it was asked."""

    def __init__(self, sessions: dict[str, list[tuple[str, str]]]) -> None:
        self.sessions = sessions  # newest first
        self.asked: list[tuple[str, int]] = []
        self.read_as: list[str] = []

    async def list_sessions(
        self, agent: str, limit: int, *, caller: Caller
    ) -> list[SessionSummary]:
        self.asked.append((agent, limit))
        return [
            SessionSummary(session_id=sid, status="active", updated_at=f"2026-11-{30 - i:02d}")
            for i, sid in enumerate(self.sessions)
        ][:limit]

    async def read_messages(
        self, agent: str, session_id: str, limit: int, *, caller: Caller
    ) -> list[tuple[str, str]]:
        self.read_as.append(agent)
        if session_id not in self.sessions:
            raise NotFoundError(session_id)
        return self.sessions[session_id][-limit:]


def context(
    tmp_path: Path,
    sessions: SessionReader | None,
    caller: Caller = OPERATOR,
    session_id: str = "current",
) -> ToolContext:
    return ToolContext(
        caller=caller,
        session_id=session_id,
        agent_name="assistant",
        agent_dir=tmp_path,
        workspace_dir=tmp_path,
        world_memory_dir=tmp_path,
        sessions=sessions,
    )


async def test_without_a_session_port_the_tool_is_unavailable(tmp_path: Path) -> None:
    outcome = await SessionTool().run({"action": "list"}, context(tmp_path, None))
    assert not outcome.success
    assert outcome.content.startswith("session tool unavailable")


async def test_list_shows_ten_siblings_newest_first_without_the_current_one(
    tmp_path: Path,
) -> None:
    ids = ["s0", "current", *(f"s{i}" for i in range(1, 15))]
    fake = FakeSessions({sid: [] for sid in ids})
    outcome = await SessionTool().run({"action": "list"}, context(tmp_path, fake))
    lines = outcome.content.splitlines()
    assert outcome.success
    assert [line.split()[1] for line in lines] == ["s0", *(f"s{i}" for i in range(1, 10))]
    assert lines[0] == "- s0 (active, updated 2026-11-30)"
    assert fake.asked[0][0] == "assistant"


async def test_list_with_no_siblings_says_so(tmp_path: Path) -> None:
    outcome = await SessionTool().run(
        {"action": "list"}, context(tmp_path, FakeSessions({"current": []}))
    )
    assert outcome.content == "No other sessions"


async def test_read_returns_the_last_messages_each_cut_at_500_characters(
    tmp_path: Path,
) -> None:
    long = "é" * 499 + "🙂" + "tail"  # multibyte characters right at the cut
    messages = [("user", f"m{i}") for i in range(30)] + [("assistant", long)]
    ctx = context(tmp_path, FakeSessions({"other": messages}))
    outcome = await SessionTool().run({"action": "read", "session_id": "other", "limit": 3}, ctx)
    parts = outcome.content.split("\n\n")
    assert parts == ["[user] m28", "[user] m29", "[assistant] " + "é" * 499 + "🙂…"]


async def test_read_always_asks_for_the_calling_agents_session(tmp_path: Path) -> None:
    sessions = FakeSessions({"other": [("user", "hi")]})
    await SessionTool().run({"action": "read", "session_id": "other"}, context(tmp_path, sessions))
    assert sessions.read_as == ["assistant"]


@pytest.mark.parametrize(("limit", "shown"), [(None, 20), (0, 1), (500, 50), ("7", 7)])
async def test_read_limit_defaults_to_20_and_is_clamped(
    limit: object, shown: int, tmp_path: Path
) -> None:
    ctx = context(tmp_path, FakeSessions({"other": [("user", f"m{i}") for i in range(80)]}))
    args: dict[str, object] = {"action": "read", "session_id": "other"}
    if limit is not None:
        args["limit"] = limit
    outcome = await SessionTool().run(args, ctx)
    assert len(outcome.content.split("\n\n")) == shown


async def test_reading_an_unknown_session_is_an_unsuccessful_outcome(tmp_path: Path) -> None:
    ctx = context(tmp_path, FakeSessions({}))
    outcome = await SessionTool().run({"action": "read", "session_id": "ghost"}, ctx)
    assert not outcome.success
    assert "not found" in outcome.content


@pytest.mark.parametrize("args", [{"action": "read"}, {"action": "delete"}, {}])
async def test_bad_arguments_are_unsuccessful_outcomes(
    args: dict[str, str], tmp_path: Path
) -> None:
    outcome = await SessionTool().run(args, context(tmp_path, FakeSessions({})))
    assert not outcome.success


def test_the_policy_string_names_the_action() -> None:
    assert SessionTool().invocation({"action": "read", "session_id": "x"}) == "session:read"


# --- scope: a chat sees its own sessions only (issue 33) -------------------------------------

ALICE_DM = ChatRef("telegram", "100")
BOB_DM = ChatRef("telegram", "200")
ALICE = Caller(role="member", chat=ALICE_DM, sender_id="100")
BOB = Caller(role="member", chat=BOB_DM, sender_id="200")
AGENT_WIDE_OWNER = Caller(role="owner", chat=ALICE_DM, sender_id="100", agent_wide=True)
CHAT_SCOPED_OWNER = Caller(role="owner", chat=ALICE_DM, sender_id="100")


@dataclass
class TwoChats:
    """A real registry with Alice's DM (two sessions: one ended by /reset), Bob's, and HTTP."""

    reader: RegistrySessionReader
    alice_old: str
    alice: str
    bob: str
    http: str
    elsewhere: str
    """Another agent's session in Bob's chat."""


@asynccontextmanager
async def two_chats(tmp_path: Path) -> AsyncIterator[TwoChats]:
    reg = SessionRegistry(SessionStore(tmp_path / "sessions"))
    await reg.open()
    try:

        async def made(chat: ChatRef | None, text: str, agent: str = "assistant") -> str:
            sid = await reg.create(
                NewSession(
                    agent=agent,
                    gateway=chat.gateway if chat else None,
                    gateway_chat_id=chat.chat_id if chat else None,
                )
            )
            await reg.handle(sid).add_user_message(content=text)
            return sid

        alice_old = await made(ALICE_DM, "remind me about the dentist")
        alice = await made(ALICE_DM, "my bank PIN is 4921")
        bob = await made(BOB_DM, "hello, who else talks to you?")
        http = await made(None, "operator's own notes")
        elsewhere = await made(BOB_DM, "other agent", agent="other")
        yield TwoChats(RegistrySessionReader(reg), alice_old, alice, bob, http, elsewhere)
    finally:
        await reg.aclose()


async def test_another_chat_can_neither_list_nor_read_a_dm(tmp_path: Path) -> None:
    async with two_chats(tmp_path) as c:
        ctx = context(tmp_path, c.reader, caller=BOB, session_id=c.bob)
        listed = await SessionTool().run({"action": "list"}, ctx)
        read = await SessionTool().run({"action": "read", "session_id": c.alice}, ctx)
        missing = await SessionTool().run({"action": "read", "session_id": "s_missing"}, ctx)
        http = await SessionTool().run({"action": "read", "session_id": c.http}, ctx)
    assert listed.content == "No other sessions"
    assert (read.success, read.content) == (False, f"session {c.alice!r} not found")
    assert (missing.success, missing.content) == (False, "session 's_missing' not found")
    assert (http.success, http.content) == (False, f"session {c.http!r} not found")
    for outcome in (listed, read, http):
        assert "4921" not in outcome.content
        assert str(tmp_path) not in outcome.content


async def test_a_chat_sees_its_own_earlier_sessions(tmp_path: Path) -> None:
    async with two_chats(tmp_path) as c:
        ctx = context(tmp_path, c.reader, caller=ALICE, session_id=c.alice)
        listed = await SessionTool().run({"action": "list"}, ctx)
        read = await SessionTool().run({"action": "read", "session_id": c.alice_old}, ctx)
    assert [line.split()[1] for line in listed.content.splitlines()] == [c.alice_old]
    assert read.content == "[user] remind me about the dentist"


async def test_an_owner_in_chat_scope_sees_only_the_chat_too(tmp_path: Path) -> None:
    async with two_chats(tmp_path) as c:
        ctx = context(tmp_path, c.reader, caller=CHAT_SCOPED_OWNER, session_id=c.alice)
        listed = await SessionTool().run({"action": "list"}, ctx)
        read = await SessionTool().run({"action": "read", "session_id": c.bob}, ctx)
    assert [line.split()[1] for line in listed.content.splitlines()] == [c.alice_old]
    assert not read.success


@pytest.mark.parametrize("caller", [OPERATOR, AGENT_WIDE_OWNER], ids=["operator", "owner"])
async def test_the_operator_and_an_agent_wide_owner_see_every_chat(
    caller: Caller, tmp_path: Path
) -> None:
    async with two_chats(tmp_path) as c:
        ctx = context(tmp_path, c.reader, caller=caller, session_id=c.bob)
        listed = await SessionTool().run({"action": "list"}, ctx)
        read = await SessionTool().run({"action": "read", "session_id": c.alice}, ctx)
        other_agent = await SessionTool().run({"action": "read", "session_id": c.elsewhere}, ctx)
    shown = {line.split()[1] for line in listed.content.splitlines()}
    assert shown == {c.alice_old, c.alice, c.http}
    assert read.content == "[user] my bank PIN is 4921"
    assert (other_agent.success, other_agent.content) == (
        False,
        f"session {c.elsewhere!r} not found",
    )
