"""A chat's received files are visible to that chat's sandboxed tools only (issue 36, item 4).

Documents are saved in ``<agent>/files/<session id>/`` (``agents.chat_files``), inside the
agent's folder every session's tools share. Through the real bash tool and bwrap: a session
sees and writes its own folder, and another session's is not there at all.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from duragent.agents.chat_files import chat_files_dir
from duragent.tools.base import ToolContext
from duragent.tools.sandbox import Sandbox
from tests.tools.sandbox_support import bwrap
from tests.tools.test_sandbox import bash, workspace

__all__ = ["bwrap"]


def received(ctx: ToolContext, session_id: str, name: str, text: str) -> Path:
    """A file saved for ``session_id`` as the gateway saves a received document."""
    folder = chat_files_dir(ctx.agent_dir, session_id)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


async def test_a_sandboxed_command_sees_and_writes_its_own_chats_files(
    tmp_path: Path, bwrap: str
) -> None:
    ctx = workspace(tmp_path)
    received(ctx, "s_mine", "a1b2c3d4-report.txt", "my report")
    own = chat_files_dir(ctx.agent_dir, "s_mine")
    ok, text = await bash(ctx, f"ls {own} && cat {own}/a1b2c3d4-report.txt && echo x > {own}/n")
    assert ok, text
    assert text == "a1b2c3d4-report.txt\nmy report"
    assert (own / "n").read_text() == "x\n"  # written through to the agent's folder


async def test_a_sandboxed_command_cannot_see_another_chats_files(
    tmp_path: Path, bwrap: str
) -> None:
    ctx = workspace(tmp_path)
    theirs = received(ctx, "s_other", "e5f6a7b8-secret.txt", "their secret")
    files = theirs.parent.parent
    ok, text = await bash(ctx, f"ls -a {files}")
    assert (ok, text) == (True, ".\n..\ns_mine\n")  # the other chat's folder is not there
    ok, text = await bash(ctx, f"cat {theirs}; echo y > {theirs}")
    assert not ok
    assert "their secret" not in text
    assert "No such file or directory" in text
    assert theirs.read_text() == "their secret"
    # Nothing new can be put beside the chat's own folder either (it would vanish anyway).
    ok, text = await bash(ctx, f"mkdir {files}/s_third")
    assert not ok
    assert "Read-only file system" in text
    assert not (files / "s_third").exists()
    # The same command unconfined reads it: under trust every chat's files are visible.
    ok, text = await bash(replace(ctx, sandbox=Sandbox()), f"cat {theirs}")
    assert (ok, text) == (True, "their secret")


async def test_the_chats_files_folder_is_made_for_a_session_that_has_none_yet(
    tmp_path: Path, bwrap: str
) -> None:
    ctx = workspace(tmp_path)
    ok, text = await bash(ctx, "echo notes > files/s_mine/notes.txt && ls files")
    assert (ok, text) == (True, "s_mine\n")
    assert (chat_files_dir(ctx.agent_dir, "s_mine") / "notes.txt").read_text() == "notes\n"


async def test_a_files_folder_that_is_a_symlink_fails_the_command_before_it_runs(
    tmp_path: Path, bwrap: str
) -> None:
    ctx = workspace(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (ctx.agent_dir / "files").symlink_to(elsewhere)
    ok, text = await bash(ctx, "echo ran > ran.txt")
    assert not ok
    assert "files is not a folder" in text
    assert not (ctx.agent_dir / "ran.txt").exists()


async def test_a_read_only_agent_folder_shows_the_chats_files_read_only(
    tmp_path: Path, bwrap: str
) -> None:
    """``agent.yaml`` naming a prompt in ``files/`` (refused by the loader) locks the folder."""
    ctx = workspace(tmp_path)
    (ctx.agent_dir / "agent.yaml").write_text("spec:\n  soul: files/s_mine/soul.md\n")
    soul = received(ctx, "s_mine", "soul.md", "be kind")
    ok, text = await bash(ctx, f"cat {soul} && echo evil > {soul}")
    assert not ok
    assert text.startswith("be kind")
    assert "Read-only file system" in text
    assert soul.read_text() == "be kind"


@pytest.mark.parametrize("session_id", ["s_mine", "20261205-a.b_c"])
def test_the_confined_command_line_hides_files_and_binds_the_sessions_folder_back(
    tmp_path: Path, session_id: str
) -> None:
    """Without bwrap too: the order of the mounts is what makes the promise."""
    agent = tmp_path / "agent"
    agent.mkdir()
    sandbox = Sandbox(mode="bubblewrap", scratch_root=tmp_path / "scratch", bwrap="/bin/true")
    argv, _ = sandbox.confine(agent, session_id).apply(["/bin/ls"], cwd=agent, env={})
    files, own = str(agent / "files"), str(agent / "files" / session_id)
    tmpfs = argv.index("--tmpfs", argv.index(str(agent)))
    assert argv[tmpfs : tmpfs + 5] == ["--tmpfs", files, "--bind", own, own]
    assert argv.index("--remount-ro", tmpfs) < argv.index("--chdir")
    assert argv[argv.index("--remount-ro", tmpfs) + 1] == files
    assert os.path.isdir(own)
