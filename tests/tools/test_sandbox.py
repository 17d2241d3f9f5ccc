"""``sandbox.mode: bubblewrap``: tool commands run confined, through the real tools and bwrap."""

from __future__ import annotations

import asyncio
import os
import socket
import textwrap
import time
from dataclasses import replace
from pathlib import Path

from duragent.config.workspace import load_workspace
from duragent.core.caller import OPERATOR
from duragent.tools.base import ToolContext
from duragent.tools.bash import BashTool
from duragent.tools.cli_tool import CliTool
from duragent.tools.processes import BackgroundProcessTool, ProcessRegistry
from duragent.tools.sandbox import Sandbox, for_workspace, prune_scratch
from tests.tools.processes.helpers import Told
from tests.tools.sandbox_support import bwrap

__all__ = ["bwrap"]

SECRET = "ghp_0123456789abcdefSECRET"


def workspace(root: Path, sandbox_yaml: str = "mode: bubblewrap") -> ToolContext:
    """A workspace with two sessions, a policy and a token, and the context of one session."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "duragent.yaml").write_text(
        "sandbox:\n" + textwrap.indent(textwrap.dedent(sandbox_yaml), "  "), encoding="utf-8"
    )
    (root / ".env").write_text(f"GITHUB_TOKEN={SECRET}\n", encoding="utf-8")
    ws = load_workspace(root)
    agent = ws.paths.agents / "alpha"
    agent.mkdir(parents=True)
    (agent / "agent.yaml").write_text("kind: Agent\n", encoding="utf-8")
    for session in ("s_mine", "s_other"):
        folder = ws.paths.sessions / session
        folder.mkdir(parents=True)
        (folder / "events.jsonl").write_text(f'{{"said": "{session} private"}}\n')
    ws.paths.policy.write_text("mode: ask\n", encoding="utf-8")
    return ToolContext(
        caller=OPERATOR,
        session_id="s_mine",
        agent_name="alpha",
        agent_dir=agent,
        workspace_dir=ws.paths.workspace,
        world_memory_dir=ws.paths.world_memory,
        env={"PATH": os.environ["PATH"], "LANG": "C.UTF-8", "GITHUB_TOKEN": SECRET},
        sandbox=for_workspace(ws.config.sandbox, ws.paths),
    )


async def bash(ctx: ToolContext, command: str) -> tuple[bool, str]:
    outcome = await BashTool(timeout=20).run({"command": command}, ctx)
    return outcome.success, outcome.content


async def test_a_sandboxed_command_cannot_read_another_sessions_events(
    tmp_path: Path, bwrap: str
) -> None:
    ctx = workspace(tmp_path)
    other = tmp_path / ".duragent" / "sessions" / "s_other" / "events.jsonl"
    ok, text = await bash(ctx, f"cat {other}; ls {other.parent.parent}")
    assert not ok
    assert "private" not in text
    assert "No such file or directory" in text
    # The same call unconfined reads it: what the sandbox prevents is real.
    assert "s_other private" in (await bash(ctx_trust(ctx), f"cat {other}"))[1]


def ctx_trust(ctx: ToolContext) -> ToolContext:
    """The same session's context without a sandbox."""
    return replace(ctx, sandbox=Sandbox())


async def test_a_sandboxed_command_writes_only_its_agent_folder_and_its_scratch(
    tmp_path: Path, bwrap: str
) -> None:
    ctx = workspace(tmp_path)
    ok, text = await bash(ctx, 'echo made > here.txt && echo kept > "$HOME/notes.txt" && echo ok')
    assert ok, text
    assert (ctx.agent_dir / "here.txt").read_text() == "made\n"
    scratch = tmp_path / ".duragent" / "scratch" / "s_mine"
    assert (scratch / "notes.txt").read_text() == "kept\n"
    # Outside them: refused (the system is read-only) or written to the call's own private
    # /tmp, which is gone when the call ends; never onto the host's disk.
    ok, text = await bash(ctx, "echo no > /usr/escaped.txt")
    assert not ok
    assert "Read-only file system" in text
    for outside in (tmp_path / "escaped.txt", ctx.agent_dir.parent / "x", Path("/escaped.txt")):
        await bash(ctx, f"echo no > {outside}")
        assert not outside.exists(), outside
    # The scratch folder outlives the call; /tmp does not.
    ok, text = await bash(ctx, 'cat "$HOME/notes.txt" && echo t > /tmp/t && cat /tmp/t')
    assert (ok, text) == (True, "kept\nt\n")
    ok, text = await bash(ctx, "cat /tmp/t")
    assert not ok
    assert "No such file" in text


async def test_a_token_in_the_servers_environment_never_reaches_a_sandboxed_command(
    tmp_path: Path, bwrap: str
) -> None:
    ctx = workspace(tmp_path, "mode: bubblewrap\nenv: [GIT_AUTHOR_NAME, GIT_*]\n")
    ctx = ctx_with_env(ctx, GIT_AUTHOR_NAME="Ada", GIT_ASKPASS_TOKEN=SECRET)
    _, text = await bash(ctx, f"env; cat {tmp_path / '.env'} {tmp_path / 'duragent.yaml'}")
    assert SECRET not in text
    assert "GIT_AUTHOR_NAME=Ada" in text
    assert "LANG=C.UTF-8" in text
    assert SECRET in (await bash(ctx_trust(ctx), "env"))[1]  # what the sandbox removed


def ctx_with_env(ctx: ToolContext, **extra: str) -> ToolContext:
    return replace(ctx, env={**ctx.env, **extra})


async def test_with_the_network_off_a_local_listening_socket_cannot_be_reached(
    tmp_path: Path, bwrap: str
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        probe = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"
        ok, text = await bash(workspace(tmp_path / "off"), probe)
        assert not ok
        assert "connected" not in text
        ok, text = await bash(workspace(tmp_path / "on", "mode: bubblewrap\nnetwork: true"), probe)
        assert (ok, text.strip()) == (True, "connected")


async def test_policy_files_are_covered_and_cannot_be_created_by_the_sandbox(
    tmp_path: Path, bwrap: str
) -> None:
    ctx = workspace(tmp_path)
    (ctx.agent_dir / "policy.yaml").write_text("deny: ['bash:rm *']\n", encoding="utf-8")
    policy = tmp_path / ".duragent" / "policy.yaml"
    ok, text = await bash(
        ctx,
        f"cat policy.yaml {policy}; echo 'mode: dangerous' > policy.local.yaml; "
        "echo 'allow: [\"*\"]' >> policy.yaml",
    )
    assert not ok
    assert "bash:rm" not in text
    assert "mode: ask" not in text
    assert (ctx.agent_dir / "policy.yaml").read_text() == "deny: ['bash:rm *']\n"
    assert (ctx.agent_dir / "policy.local.yaml").read_text() == ""


async def test_a_workspace_cli_tool_runs_in_the_sandbox_with_this_python(
    tmp_path: Path, bwrap: str
) -> None:
    ctx = workspace(tmp_path)
    script = tmp_path / ".duragent" / "tools" / "peek" / "run.py"
    script.parent.mkdir(parents=True)
    script.write_text(
        "import os, sys\n"
        "print('args', sys.argv[1:])\n"
        f"print('sessions', os.path.exists({str(tmp_path / '.duragent' / 'sessions')!r}))\n"
    )
    tool = CliTool("peek", script, "peek", timeout=20)
    outcome = await tool.run({"args": "a 'b c'"}, ctx)
    assert outcome.success, outcome.content
    assert outcome.content == "args ['a', 'b c']\nsessions False\n"


async def test_a_missing_bwrap_fails_the_command_and_never_runs_it_unconfined(
    tmp_path: Path,
) -> None:
    ctx = workspace(tmp_path)
    broken = replace(ctx.sandbox, bwrap=str(tmp_path / "no-bwrap"))
    ok, text = await bash(replace(ctx, sandbox=broken), "touch ran.txt")
    assert not ok
    assert "bwrap is missing" in text
    assert "apt-get install bubblewrap" in text
    assert not (ctx.agent_dir / "ran.txt").exists()


async def test_docker_mode_never_runs_a_command(tmp_path: Path) -> None:
    ctx = workspace(tmp_path, "mode: docker")
    ok, text = await bash(ctx, "touch ran.txt")
    assert not ok
    assert "sandbox.mode docker is not supported" in text
    assert not (ctx.agent_dir / "ran.txt").exists()


def test_only_the_base_variables_and_configured_names_pass_and_globs_never_pass_secrets() -> None:
    sandbox = Sandbox(mode="bubblewrap", env=("MY_TOKEN", "APP_*"))
    env = {
        "PATH": "/bin",
        "LC_ALL": "C",
        "HOME": "/root",
        "OPENAI_API_KEY": "k",
        "MY_TOKEN": "named in full",
        "APP_MODE": "dev",
        "APP_SECRET": "s",
        "APP_DB_PASSWORD": "p",
        "AWS_SESSION_TOKEN": "t",
    }
    assert sandbox.filter_env(env) == {
        "PATH": "/bin",
        "LC_ALL": "C",
        "MY_TOKEN": "named in full",
        "APP_MODE": "dev",
    }


def running(marker: str) -> list[str]:
    """Command lines of live processes that mention ``marker``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in text:
            found.append(text)
    return found


async def test_a_process_that_left_the_group_still_ends_with_the_sandboxed_call(
    tmp_path: Path, bwrap: str
) -> None:
    ctx = workspace(tmp_path)
    ok, text = await bash(ctx, "setsid sleep 4242.5 & echo started")
    assert (ok, text) == (True, "started\n")
    # Unconfined, `setsid` escapes the process group; in the sandbox its pid namespace ends
    # with the call, and everything in it.
    for _ in range(6_000):
        if not running("sleep 4242.5"):
            break
        await asyncio.sleep(0.02)
    assert running("sleep 4242.5") == []


def test_the_sweep_removes_only_scratch_folders_of_deleted_sessions(tmp_path: Path) -> None:
    """The store says which sessions exist: with PostgreSQL no session has a folder, and the
    sweep removed every scratch folder, a live session's too, while its tool calls ran in it
    ("bwrap: Can't find source path", the month of strangers with two nodes, issue 40)."""
    sandbox = Sandbox(mode="bubblewrap", scratch_root=tmp_path / "scratch")
    hour_ago = time.time() - 3600
    for session in ("s_live", "s_gone"):
        (tmp_path / "scratch" / session).mkdir(parents=True)
        (tmp_path / "scratch" / session / "notes.txt").write_text("x")
        os.utime(tmp_path / "scratch" / session, (hour_ago, hour_ago))
    (tmp_path / "scratch" / "s_new").mkdir()  # made a moment ago, for a session just begun
    assert prune_scratch(sandbox, lambda: ["s_live"]) == ["s_gone"]
    assert (tmp_path / "scratch" / "s_live" / "notes.txt").exists()
    assert (tmp_path / "scratch" / "s_new").exists()
    assert not (tmp_path / "scratch" / "s_gone").exists()
    assert prune_scratch(Sandbox(), lambda: []) == []  # trust: no scratch folders


async def test_a_background_job_runs_confined_like_a_bash_call(tmp_path: Path, bwrap: str) -> None:
    ctx = workspace(tmp_path)
    other = tmp_path / ".duragent" / "sessions" / "s_other" / "events.jsonl"
    told = Told()
    registry = ProcessRegistry(ctx.workspace_dir / "processes", events=told, poll_seconds=0.05)
    await registry.start()
    try:
        tool = BackgroundProcessTool(registry)
        command = f'cat {other}; echo "token=$GITHUB_TOKEN"; echo job > made.txt; echo done'
        spawned = await tool.run({"action": "spawn", "command": command}, ctx)
        assert spawned.success, spawned.content
        message = await told.wait_ended()
        interactive = await tool.run(
            {"action": "spawn", "command": "top", "interactive": True}, ctx
        )
    finally:
        await registry.stop()
    assert "private" not in message
    assert SECRET not in message
    assert "token=\n" in message
    assert "done" in message
    assert (ctx.agent_dir / "made.txt").read_text() == "job\n"  # its own folder: writable
    assert not interactive.success  # tmux would run it outside the sandbox: refused
    assert "sandbox" in interactive.content


DEFINITION = """\
kind: Agent
spec:
  soul: ./prompts/soul.md
  system_prompt: ./SYSTEM_PROMPT.md
  tools:
    - {type: cli, name: peek, command: ./bin/peek.sh}
"""
PROTECTED = (
    "agent.yaml",
    "SOUL.md",
    "SYSTEM_PROMPT.md",
    "INSTRUCTIONS.md",
    "prompts",
    "bin",
    "skills",
    "directives",
    "tools",
    "policy.yaml",
    "policy.local.yaml",
    ".env",
)
ATTACKS = {
    "write": 'printf evil > "$p"',
    "append": 'echo evil >> "$p"',
    "create inside": 'echo evil > "$p/new.md"',
    "write inside": 'for f in "$p"/*; do echo evil >> "$f"; done; [ -e "$p/x.md" ]',
    "rename over": 'echo evil > t && mv -fT t "$p"',
    "rename away": 'mv -T "$p" moved && echo evil > "$p"',
    "delete": 'rm -rf "$p" && [ ! -e "$p" ]',
    "symlink-replace": 'ln -sfnT /tmp/evil "$p"',
    "hard link over": 'ln -fT SOUL.md "$p" 2>/dev/null || { echo evil > t && ln -fT t "$p"; }',
}


def tree(folder: Path) -> dict[str, str]:
    """Every entry under ``folder`` (symlinks as links): what it is and holds."""
    found = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if path.is_symlink():
            found[name] = f"-> {os.readlink(path)}"
        elif path.is_dir():
            found[name] = "dir"
        else:
            found[name] = path.read_text()
    return found


async def test_no_sandboxed_command_can_change_any_file_of_the_agents_definition(
    tmp_path: Path, bwrap: str
) -> None:
    ctx = workspace(tmp_path)
    agent = ctx.agent_dir
    (agent / "agent.yaml").write_text(DEFINITION)
    for name, text in {
        "prompts/soul.md": "be kind",
        "SYSTEM_PROMPT.md": "answer briefly",
        "bin/peek.sh": "#!/bin/sh\necho peek\n",
        "skills/greet/SKILL.md": "---\nname: greet\n---\nsay hi",
        "directives/tone.md": "be calm",
        "tools/t/run": "#!/bin/sh\n",
        "policy.yaml": "mode: ask\n",
        ".env": "OPENAI_API_KEY=sk-agent\n",
    }.items():  # SOUL.md, INSTRUCTIONS.md and policy.local.yaml do not exist yet
        (agent / name).parent.mkdir(parents=True, exist_ok=True)
        (agent / name).write_text(text)
    beta = agent.parent / "beta"
    beta.mkdir()
    (beta / "agent.yaml").write_text("kind: Agent\n")
    before = tree(agent)
    script = "; ".join(
        f'p={name}; ( {command} ) 2>/dev/null && echo "DONE {label} {name}"'
        for name in PROTECTED
        for label, command in ATTACKS.items()
    )
    ok, text = await bash(ctx, f"{script}; ls {beta} || echo NO-BETA; echo end")
    assert ok, text
    assert "DONE" not in text, text
    assert "NO-BETA" in text  # other agents are not there at all
    after = tree(agent)
    # Missing names became empty placeholders (a folder for the definition folders), and the
    # session's files folder its mount point; nothing else changed, and nothing was left
    # behind under a protected name.
    made = {name: after.pop(name) for name in set(after) - set(before)}
    placeholders = {"SOUL.md": "", "INSTRUCTIONS.md": "", "policy.local.yaml": ""}
    files = {"files": "dir", "files/s_mine": "dir"}
    assert made == {**placeholders, **files, "t": "evil\n"}
    assert after == before
    # The working area is writable as before: the folder itself, memory/, the scratch folder.
    ok, text = await bash(ctx, "echo a > notes.txt && mkdir -p memory && echo b > memory/x.md")
    assert ok, text
    assert (agent / "memory" / "x.md").read_text() == "b\n"
