"""The session tool lists and reads sibling sessions through the SessionReader port."""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.errors import NotFoundError
from duragent.tools.base import SessionReader, SessionSummary, ToolContext
from duragent.tools.session_tool import SessionTool


class FakeSessions:
    """A SessionReader over fixed data, recording what it was asked."""

    def __init__(self, sessions: dict[str, list[tuple[str, str]]]) -> None:
        self.sessions = sessions  # newest first
        self.asked: list[tuple[str, int]] = []
        self.read_as: list[str] = []

    async def list_sessions(self, agent: str, limit: int) -> list[SessionSummary]:
        self.asked.append((agent, limit))
        return [
            SessionSummary(session_id=sid, status="active", updated_at=f"2026-11-{30 - i:02d}")
            for i, sid in enumerate(self.sessions)
        ][:limit]

    async def read_messages(self, agent: str, session_id: str, limit: int) -> list[tuple[str, str]]:
        self.read_as.append(agent)
        if session_id not in self.sessions:
            raise NotFoundError(session_id)
        return self.sessions[session_id][-limit:]


def context(tmp_path: Path, sessions: SessionReader | None) -> ToolContext:
    return ToolContext(
        session_id="current",
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
