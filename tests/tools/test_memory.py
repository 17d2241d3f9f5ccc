"""The memory tool keeps world knowledge, long-term memory and daily notes as Markdown files."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest

from duragent.core.caller import OPERATOR, Caller, ChatRef
from duragent.core.clock import use_time_source
from duragent.tools.base import ToolContext
from duragent.tools.memory import MemoryTool, chats_memory_root, memory_dir, sanitize_topic
from tests.store.failing_ops import FailingFileOps

NOW = datetime(2026, 11, 22, 9, 5)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    agent_dir = tmp_path / ".duragent" / "agents" / "assistant"
    agent_dir.mkdir(parents=True)
    return ToolContext(
        caller=OPERATOR,
        session_id="s1",
        agent_name="assistant",
        agent_dir=agent_dir,
        workspace_dir=tmp_path / ".duragent",
        world_memory_dir=tmp_path / ".duragent" / "memory" / "world",
    )


def at(when: datetime) -> MemoryTool:
    return MemoryTool(clock=lambda: when)


async def test_recall_with_nothing_stored_says_so(ctx: ToolContext) -> None:
    outcome = await at(NOW).run({"action": "recall"}, ctx)
    assert outcome.success
    assert outcome.content == "No memories found"


async def test_remember_appends_timed_entries_under_a_date_header(ctx: ToolContext) -> None:
    await at(NOW).run({"action": "remember", "content": "Met Ana."}, ctx)
    await at(NOW.replace(minute=30)).run({"action": "remember", "content": "Ana likes tea."}, ctx)
    daily = ctx.agent_dir / "memory" / "daily" / "2026-11-22.md"
    assert daily.read_text() == (
        "# 2026-11-22\n\n## 09:05\n\nMet Ana.\n\n## 09:30\n\nAna likes tea.\n"
    )


async def test_concurrent_remembers_write_one_header_and_every_entry(ctx: ToolContext) -> None:
    tool = at(NOW)
    await asyncio.gather(
        *(tool.run({"action": "remember", "content": f"note {i}"}, ctx) for i in range(20))
    )
    text = (ctx.agent_dir / "memory" / "daily" / "2026-11-22.md").read_text()
    assert text.count("# 2026-11-22") == 1
    assert all(f"note {i}\n" in text for i in range(20))


async def test_recall_joins_world_memory_and_recent_days_in_order(ctx: ToolContext) -> None:
    await at(NOW).run({"action": "update_world", "topic": "Zebras", "content": "Stripes."}, ctx)
    await at(NOW).run({"action": "update_world", "topic": "apples", "content": "Red."}, ctx)
    await at(NOW).run({"action": "reflect", "content": "I am helpful."}, ctx)
    for day, note in [(18, "too old"), (20, "two days ago"), (21, "yesterday"), (22, "today")]:
        await at(NOW.replace(day=day)).run({"action": "remember", "content": note}, ctx)

    outcome = await at(NOW).run({"action": "recall"}, ctx)

    assert outcome.content == (
        "# World Knowledge\n\n## apples\n\nRed.\n\n## zebras\n\nStripes."
        "\n\n---\n\n# Your Memory\n\nI am helpful."
        "\n\n---\n\n# Recent Experiences\n\n"
        "# 2026-11-22\n\n## 09:05\n\ntoday\n\n"
        "# 2026-11-21\n\n## 09:05\n\nyesterday\n\n"
        "# 2026-11-20\n\n## 09:05\n\ntwo days ago"
    )


async def test_recall_days_widens_the_window_and_is_clamped(ctx: ToolContext) -> None:
    await at(NOW.replace(day=18)).run({"action": "remember", "content": "four days ago"}, ctx)
    assert "four days ago" not in (await at(NOW).run({"action": "recall"}, ctx)).content
    wide = await at(NOW).run({"action": "recall", "days": 5}, ctx)
    assert "four days ago" in wide.content
    assert (await at(NOW).run({"action": "recall", "days": 0}, ctx)).content == (
        "No memories found"
    )


async def test_reflect_reads_then_rewrites_memory_atomically(ctx: ToolContext) -> None:
    tool = at(NOW)
    assert "empty" in (await tool.run({"action": "reflect"}, ctx)).content
    await tool.run({"action": "reflect", "content": "First draft."}, ctx)
    await tool.run({"action": "reflect", "content": "Second draft."}, ctx)
    assert (await tool.run({"action": "reflect"}, ctx)).content == "Second draft."
    memory_dir = ctx.agent_dir / "memory"
    assert [p.name for p in memory_dir.iterdir() if p.is_file()] == ["MEMORY.md"]


@pytest.mark.parametrize(
    ("topic", "stem"),
    [("Tea Shops", "tea-shops"), ("../../etc/passwd", "------etc-passwd"), ("a_b-C9", "a_b-c9")],
)
def test_world_topics_become_safe_file_names(topic: str, stem: str) -> None:
    assert sanitize_topic(topic) == stem


async def test_update_world_replaces_the_topic_file_inside_the_world_folder(
    ctx: ToolContext,
) -> None:
    tool = at(NOW)
    await tool.run({"action": "update_world", "topic": "../secret", "content": "one"}, ctx)
    await tool.run({"action": "update_world", "topic": "../secret", "content": "two"}, ctx)
    assert sorted(p.name for p in ctx.world_memory_dir.iterdir()) == ["---secret.md"]
    assert (ctx.world_memory_dir / "---secret.md").read_text() == "two\n"


@pytest.mark.parametrize(
    "args",
    [
        {"action": "remember"},
        {"action": "update_world", "topic": "x"},
        {"action": "update_world", "content": "x"},
        {"action": "update_world", "topic": "!!!", "content": "x"},
        {"action": "forget"},
    ],
)
async def test_missing_or_bad_arguments_are_unsuccessful_outcomes(
    args: dict[str, str], ctx: ToolContext
) -> None:
    outcome = await at(NOW).run(args, ctx)
    assert not outcome.success
    assert outcome.content


async def test_a_note_saved_in_another_encoding_is_still_recalled(ctx: ToolContext) -> None:
    ctx.world_memory_dir.mkdir(parents=True)
    (ctx.world_memory_dir / "cafe.md").write_bytes("café".encode("latin-1"))
    outcome = await at(NOW).run({"action": "recall"}, ctx)
    assert outcome.content == "# World Knowledge\n\n## cafe\n\ncaf\ufffd"


async def test_an_unwritable_memory_folder_is_reported_not_raised(ctx: ToolContext) -> None:
    (ctx.agent_dir / "memory").write_text("a file where a folder should be")
    outcome = await at(NOW).run({"action": "remember", "content": "x"}, ctx)
    assert not outcome.success
    assert "memory remember failed" in outcome.content


def test_the_policy_string_names_the_action() -> None:
    assert MemoryTool().invocation({"action": "Remember"}) == "memory:remember"


@pytest.mark.parametrize("fault", ["write", "fsync", "rename"])
async def test_a_disk_fault_in_a_rewrite_keeps_the_old_note_and_says_why(
    ctx: ToolContext, fault: str
) -> None:
    await at(NOW).run({"action": "reflect", "content": "Ana likes tea."}, ctx)
    await at(NOW).run({"action": "update_world", "topic": "tea", "content": "Hot."}, ctx)
    ops = FailingFileOps()
    ops.failing, ops.fail_fsync, ops.fail_replace = (
        fault == "write",
        fault == "fsync",
        fault == "rename",
    )
    tool = MemoryTool(clock=lambda: NOW, ops=ops)

    reflected = await tool.run({"action": "reflect", "content": "Forget Ana."}, ctx)
    world = await tool.run({"action": "update_world", "topic": "tea", "content": "Cold."}, ctx)

    assert not reflected.success
    assert not world.success
    assert "storage error while writing" in reflected.content
    assert "MEMORY.md" in reflected.content
    assert str(ctx.workspace_dir) not in reflected.content + world.content  # no server path
    memory = ctx.agent_dir / "memory"
    assert (memory / "MEMORY.md").read_text() == "Ana likes tea.\n"
    assert (ctx.world_memory_dir / "tea.md").read_text() == "Hot.\n"
    assert sorted(p.name for p in memory.iterdir()) == ["MEMORY.md"]  # no temp file left


async def test_a_disk_fault_while_remembering_leaves_no_half_entry(ctx: ToolContext) -> None:
    await at(NOW).run({"action": "remember", "content": "Met Ana."}, ctx)
    daily = ctx.agent_dir / "memory" / "daily" / "2026-11-22.md"
    before = daily.read_text()
    ops = FailingFileOps(partial=5)
    ops.failing = True

    outcome = await MemoryTool(clock=lambda: NOW, ops=ops).run(
        {"action": "remember", "content": "Ana likes tea."}, ctx
    )

    assert not outcome.success
    assert "No space left on device" in outcome.content
    assert daily.read_text() == before


async def test_today_is_the_process_calendar_s_day(ctx: ToolContext) -> None:
    """Without a clock of its own the tool reads ``duragent.core.clock``: a process that
    simulates a year (``bench/year``) files notes under the simulated day."""
    use_time_source(lambda: datetime(2027, 2, 3, 12, 0).timestamp())
    try:
        await MemoryTool().run({"action": "remember", "content": "Met Ana."}, ctx)
    finally:
        use_time_source(time.time)
    assert (ctx.agent_dir / "memory" / "daily" / "2027-02-03.md").exists()


async def test_a_planted_symlink_never_makes_memory_write_the_agents_definition(
    ctx: ToolContext,
) -> None:
    agent = ctx.agent_dir
    (agent / "agent.yaml").write_text("kind: Agent\n")
    other = agent.parent / "other"
    other.mkdir()
    (other / "agent.yaml").write_text("kind: Agent\n")
    daily = agent / "memory" / "daily"
    daily.mkdir(parents=True)
    # What a command could leave behind: today's note, MEMORY.md and a world topic as links.
    (daily / "2026-11-22.md").symlink_to(agent / "agent.yaml")
    (agent / "memory" / "MEMORY.md").symlink_to(Path("..") / "policy.local.yaml")
    ctx.world_memory_dir.mkdir(parents=True)
    (ctx.world_memory_dir / "models.md").symlink_to(other / "agent.yaml")
    calls = [
        {"action": "remember", "content": "spec:\n  model:\n    base_url: http://evil"},
        {"action": "reflect", "content": "mode: dangerous"},
        {"action": "update_world", "topic": "models", "content": "kind: Evil"},
    ]
    outcomes = [await at(NOW).run(call, ctx) for call in calls]
    assert [o.success for o in outcomes] == [False, False, False]
    assert all("a symbolic link is in the way of the note" in o.content for o in outcomes)
    assert all(str(ctx.workspace_dir) not in o.content for o in outcomes)  # no server paths
    assert (agent / "agent.yaml").read_text() == "kind: Agent\n"
    assert not (agent / "policy.local.yaml").exists()
    assert (other / "agent.yaml").read_text() == "kind: Agent\n"


async def test_a_memory_folder_replaced_by_a_symlink_is_refused(ctx: ToolContext) -> None:
    (ctx.agent_dir / "memory").symlink_to(ctx.workspace_dir)
    outcome = await at(NOW).run({"action": "reflect", "content": "x"}, ctx)
    assert not outcome.success
    assert "a symbolic link is in the way of the note" in outcome.content
    assert not (ctx.workspace_dir / "MEMORY.md").exists()


# --- scope: what a chat's conversations left behind stays in that chat (issue 33) -----------

ALICE = Caller(role="member", chat=ChatRef("telegram", "100"), sender_id="100")
BOB = Caller(role="member", chat=ChatRef("telegram", "200"), sender_id="200")
CHAT_OWNER = Caller(role="owner", chat=ChatRef("telegram", "200"), sender_id="9")
AGENT_WIDE_OWNER = Caller(
    role="owner", chat=ChatRef("telegram", "200"), sender_id="9", agent_wide=True
)


def as_(ctx: ToolContext, caller: Caller) -> ToolContext:
    return replace(ctx, caller=caller)


async def test_another_chat_recalls_nothing_a_chat_remembered_or_reflected(
    ctx: ToolContext,
) -> None:
    tool = at(NOW)
    await tool.run({"action": "remember", "content": "my bank PIN is 4921"}, as_(ctx, ALICE))
    await tool.run({"action": "reflect", "content": "Alice banks at X."}, as_(ctx, ALICE))
    bob = as_(ctx, BOB)
    recalled = await tool.run({"action": "recall"}, bob)
    reflected = await tool.run({"action": "reflect"}, bob)
    alice_again = await tool.run({"action": "recall"}, as_(ctx, ALICE))
    assert recalled.content == "No memories found"
    assert reflected.content == "MEMORY.md is empty: nothing reflected yet"
    assert "my bank PIN is 4921" in alice_again.content
    assert "Alice banks at X." in alice_again.content


async def test_a_chat_rewriting_its_memory_leaves_the_agent_wide_memory_alone(
    ctx: ToolContext,
) -> None:
    tool = at(NOW)
    await tool.run({"action": "reflect", "content": "The operator's plans."}, ctx)
    await tool.run({"action": "remember", "content": "Operator's day."}, ctx)
    wiped = await tool.run({"action": "reflect", "content": "nothing"}, as_(ctx, BOB))
    bobs = await tool.run({"action": "recall"}, as_(ctx, BOB))
    operators = await tool.run({"action": "recall"}, ctx)
    assert wiped.content == "MEMORY.md updated"
    assert "The operator's plans." not in bobs.content
    assert "Operator's day." not in bobs.content
    assert "The operator's plans." in operators.content
    assert "Operator's day." in operators.content


@pytest.mark.parametrize("caller", [OPERATOR, AGENT_WIDE_OWNER], ids=["operator", "owner"])
async def test_the_operator_and_an_agent_wide_owner_keep_the_agent_wide_memory(
    caller: Caller, ctx: ToolContext
) -> None:
    await at(NOW).run({"action": "remember", "content": "Agent-wide."}, as_(ctx, caller))
    assert (ctx.agent_dir / "memory" / "daily" / "2026-11-22.md").exists()


async def test_every_chat_reads_world_knowledge_but_only_an_owner_changes_it(
    ctx: ToolContext,
) -> None:
    tool = at(NOW)
    shared = await tool.run(
        {"action": "update_world", "topic": "office", "content": "Opens at 9."},
        as_(ctx, CHAT_OWNER),
    )
    refused = await tool.run(
        {"action": "update_world", "topic": "office", "content": "Closed forever."},
        as_(ctx, BOB),
    )
    recalled = await tool.run({"action": "recall"}, as_(ctx, ALICE))
    assert shared.content == "World knowledge 'office' updated"
    assert (refused.success, refused.content) == (
        False,
        "memory update_world refused: world knowledge is read by every chat, so only an "
        "owner of this agent may change it (spec.access.owners in its agent.yaml)",
    )
    assert "Opens at 9." in recalled.content
    assert "Closed forever." not in recalled.content


@pytest.mark.parametrize(
    "chat_id", ["..", ".", "a/../../agent.yaml", "-100123", "x" * 300, "%hx", ""]
)
def test_a_chats_memory_folder_stays_inside_the_chats_folder(chat_id: str, tmp_path: Path) -> None:
    caller = Caller(role="member", chat=ChatRef("telegram", chat_id), sender_id="1")
    agent, chats = tmp_path / "bot", tmp_path / "chats"
    folder = memory_dir(agent, caller, chats)
    assert folder.parent == chats / "bot" / "telegram"
    assert folder.name not in ("", ".", "..")
    other = Caller(role="member", chat=ChatRef("telegram", chat_id + "x"), sender_id="1")
    assert memory_dir(agent, other, chats) != folder


async def test_a_link_in_place_of_a_note_is_never_read_out(ctx: ToolContext) -> None:
    """Found in review: recall and reflect read MEMORY.md through a link to ``.env``."""
    secret = ctx.workspace_dir / ".env"
    secret.write_text("GITHUB_TOKEN=ghp_secret\n")
    memory = ctx.agent_dir / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").symlink_to(secret)
    for call in ({"action": "recall"}, {"action": "reflect"}):
        outcome = await at(NOW).run(call, ctx)
        assert not outcome.success
        assert "ghp_secret" not in outcome.content


async def test_a_chats_notes_are_kept_out_of_the_agents_folder(ctx: ToolContext) -> None:
    """Found in review: the sandbox gives every chat's commands the agent's folder."""
    outcome = await at(NOW).run({"action": "remember", "content": "PIN 4921"}, as_(ctx, ALICE))
    assert outcome.success
    in_agent = [p for p in ctx.agent_dir.rglob("*") if p.is_file()]
    assert not any("4921" in p.read_text() for p in in_agent)
    notes = chats_memory_root(ctx.world_memory_dir)
    assert any("4921" in p.read_text() for p in notes.rglob("*.md"))
