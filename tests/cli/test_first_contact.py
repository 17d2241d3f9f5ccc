"""Rough edges a new user hit (issue 21): ports, names, flags, exit codes, messages, help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.main import get_command
from typer.testing import CliRunner

from duragent.agents import load_catalog
from duragent.agents.spec import QuotaSpec
from duragent.cli.chat import ChatSession
from duragent.cli.client import ApiClient
from duragent.cli.errors import INTERRUPTED, handles_errors
from duragent.cli.main import app
from duragent.cli.templates import ACCESS_BLOCK

runner = CliRunner()


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env=env)
    return result.exit_code, result.output


def init(root: Path, *extra: str) -> Path:
    code, out = run("init", str(root), "--no-interactive", *extra)
    assert code == 0, out
    return root / "duragent.yaml"


@pytest.mark.parametrize("port", ["99999", "-1", "65536"])
def test_serve_refuses_a_port_outside_0_to_65535_as_a_usage_error(
    tmp_path: Path, port: str
) -> None:
    config = init(tmp_path)
    code, out = run("serve", "-c", str(config), "-p", port)
    assert code == 2
    assert "Invalid value for '-p' / '--port'" in out


def test_serve_takes_its_port_from_duragent_port_too(tmp_path: Path) -> None:
    config = init(tmp_path)
    code, out = run("serve", "-c", str(config), env={"DURAGENT_PORT": "70000"})
    assert code == 2
    assert "DURAGENT_PORT" in out


def test_init_writes_the_default_compaction_mode(tmp_path: Path) -> None:
    config = init(tmp_path)
    assert "compaction: archive" in config.read_text()


def test_init_writes_an_access_block_that_answers_groups_only_when_addressed(
    tmp_path: Path,
) -> None:
    """Issue 33: the scaffold had no access block, and nothing a user reads said how to
    change who the bot answers; the block is written out, with its choices in comments."""
    init(tmp_path)
    folder = tmp_path / ".duragent" / "agents" / "assistant"
    text = (folder / "agent.yaml").read_text()
    access = load_catalog(folder.parent).get("assistant").spec.access
    assert access is not None
    assert (access.dm.policy, access.groups.activation, access.tool_scope) == (
        "open",
        "mention",
        "chat",
    )
    assert access.owners == {}
    assert access.quotas == QuotaSpec()
    for shown in (
        "#   telegram: [",
        "#   discord: [",
        "open | allowlist | pairing | disabled",
        "/pair <code>",
        "duragent pairing approve <code>",
        "#   schedules_per_chat: 20",
        "#   min_schedule_interval_seconds: 60",
        "#   messages_per_sender_per_minute: 60",
        "#   tokens_per_chat_per_day: 1000000",
        "#   background_processes_per_chat: 3",
    ):
        assert shown in text, shown
    code, out = run("doctor", "-c", str(tmp_path / "duragent.yaml"))
    assert code == 0, out
    assert "0 error(s)" in out
    assert "spec.access" not in out  # no unknown or unused field
    example = Path(__file__).parents[2] / "examples/.duragent/agents/assistant/agent.yaml"
    assert ACCESS_BLOCK in example.read_text()  # the example shows the same block


@pytest.mark.parametrize("name", ["Bad Name!", "../escape", ".hidden", "a/b"])
def test_agent_create_refuses_a_name_that_would_not_load_and_writes_nothing(
    tmp_path: Path, name: str
) -> None:
    config = init(tmp_path)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    code, out = run("agent", "create", name, "-c", str(config), "--no-interactive")
    assert code == 1
    assert f"error: invalid agent name {name!r}" in out
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_init_with_a_bad_provider_creates_no_folder(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "dir"
    code, out = run("init", str(target), "--provider", "bogus", "--no-interactive")
    assert code == 1
    assert "unknown provider 'bogus'" in out
    assert not (tmp_path / "sub").exists()


def test_init_with_a_bad_agent_name_creates_no_folder(tmp_path: Path) -> None:
    code, out = run("init", str(tmp_path / "ws"), "--agent-name", "no good", "--no-interactive")
    assert code == 1
    assert "invalid agent name" in out
    assert not (tmp_path / "ws").exists()


def test_quiet_doctor_prints_only_errors_and_the_summary(tmp_path: Path) -> None:
    config = init(tmp_path)  # warnings (the offline model, trust mode), no error
    code, out = run("-q", "doctor", "-c", str(config))
    assert code == 0
    assert out.strip().splitlines() == ["0 error(s), 2 warning(s)"]


def test_verbosity_flags_are_accepted_after_the_subcommand(tmp_path: Path) -> None:
    config = init(tmp_path)
    code, out = run("doctor", "-c", str(config), "-q")
    assert code == 0, out
    assert out.strip().splitlines() == ["0 error(s), 2 warning(s)"]
    code, out = run("doctor", "-v", "-c", str(config))
    assert code == 0, out
    assert "✓ [config]" in out


def test_doctor_reports_a_broken_agent_once(tmp_path: Path) -> None:
    config = init(tmp_path)
    broken = tmp_path / ".duragent/agents/broken"
    broken.mkdir()
    (broken / "agent.yaml").write_text("apiVersion: duragent/v9\nkind: Agent\n")
    done = subprocess.run(
        [sys.executable, "-m", "duragent", "doctor", "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert (done.stdout + done.stderr).count("duragent/v9") == 1


def test_doctor_format_other_than_text_or_json_is_a_usage_error(tmp_path: Path) -> None:
    config = init(tmp_path)
    code, out = run("doctor", "-c", str(config), "--format", "yaml")
    assert code == 2
    assert "'yaml'" in out


def test_the_config_can_come_from_duragent_config(tmp_path: Path) -> None:
    config = init(tmp_path)
    code, out = run("agent", "list", env={"DURAGENT_CONFIG": str(config)})
    assert code == 0, out
    assert out.startswith("assistant")


def test_a_config_file_that_does_not_exist_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    for command in (["serve"], ["agent", "list"], ["session", "list"], ["doctor"]):
        code, out = run(*command, "-c", str(missing))
        assert code == 1, command
        assert f"{missing} does not exist" in out, command


def test_a_server_that_does_not_answer_is_named_by_its_url(tmp_path: Path) -> None:
    code, out = run("session", "list", "-s", "http://127.0.0.1:1", "-c", str(tmp_path))
    assert code == 1
    assert "cannot reach http://127.0.0.1:1/" in out


def test_ctrl_c_at_the_chat_prompt_ends_the_command_with_130() -> None:
    def interrupt(prompt: str) -> str:
        raise KeyboardInterrupt

    chat = ChatSession(ApiClient("http://127.0.0.1:1"), "bot", "session_x", read=interrupt)
    small = typer.Typer()

    @small.command()
    @handles_errors
    def talk() -> None:
        chat.run()

    result = runner.invoke(small, [])
    assert result.exit_code == INTERRUPTED == 130


def _commands(group: Any, prefix: str = "") -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for name, command in group.commands.items():
        found.append((f"{prefix}{name}", command))
        if hasattr(command, "commands"):
            found.extend(_commands(command, f"{prefix}{name} "))
    return found


def test_every_option_of_every_command_has_help_text() -> None:
    commands = _commands(get_command(app))
    assert len(commands) > 10
    missing = [
        f"{name} {param.opts[0]}"
        for name, command in commands
        for param in command.params
        if param.param_type_name == "option" and not param.help
    ]
    assert missing == []


def test_help_shows_no_bool_placeholder_beside_flags() -> None:
    code, out = run("init", "--help")
    assert code == 0
    assert "--no-interactive" in out
    assert "<bool>" not in out
