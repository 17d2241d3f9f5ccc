"""``-h`` wherever ``--help`` works, and ``completions <shell>`` scripts that really complete."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from duragent.cli.completions import COMPLETE_VAR
from duragent.cli.main import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


def _command_paths() -> list[list[str]]:
    """Every command and subcommand of the CLI, as the words that name it."""
    root = typer.main.get_command(app)
    paths: list[list[str]] = [[]]

    def walk(command: object, words: list[str]) -> None:
        subcommands: dict[str, object] = getattr(command, "commands", {})  # a group's
        for name, sub in subcommands.items():
            paths.append([*words, name])
            walk(sub, [*words, name])

    walk(root, [])
    return paths


def test_every_command_is_walked() -> None:
    names = {" ".join(p) for p in _command_paths()}
    for expected in ("serve status", "serve stop", "serve reload-agents", "completions"):
        assert expected in names


@pytest.mark.parametrize("words", _command_paths(), ids=lambda w: " ".join(w) or "duragent")
def test_dash_h_is_help_on_every_command(words: list[str]) -> None:
    short = runner.invoke(app, [*words, "-h"])
    long = runner.invoke(app, [*words, "--help"])
    assert short.exit_code == 0, short.output
    assert short.output.startswith("Usage:")
    assert short.output == long.output


def _shell_env(tmp_path: Path) -> dict[str, str]:
    """PATH with a ``duragent`` that runs this checkout (what the scripts call back)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "duragent"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m duragent "$@"\n')
    wrapper.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    env["PYTHONPATH"] = f"{ROOT}:{env.get('PYTHONPATH', '')}"
    return env


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish", "powershell"])
def test_completions_print_a_script_that_calls_duragent_back(shell: str) -> None:
    result = runner.invoke(app, ["completions", shell])
    assert result.exit_code == 0, result.output
    assert COMPLETE_VAR in result.stdout
    assert "duragent" in result.stdout


def test_an_unknown_shell_is_a_usage_error() -> None:
    result = runner.invoke(app, ["completions", "elvish"])
    assert result.exit_code == 2
    assert "elvish" in result.output


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_the_bash_script_completes_subcommands_and_flags(tmp_path: Path) -> None:
    env = _shell_env(tmp_path)
    script = subprocess.run(
        ["duragent", "completions", "bash"], env=env, capture_output=True, text=True, check=True
    ).stdout
    probe = (
        f"{script}\n"
        "COMP_WORDS=(duragent serve s); COMP_CWORD=2; _duragent_completion duragent\n"
        'echo "serve: ${COMPREPLY[*]}"\n'
        "COMP_WORDS=(duragent chat --age); COMP_CWORD=2; _duragent_completion duragent\n"
        'echo "chat: ${COMPREPLY[*]}"\n'
    )
    out = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", probe],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    serve_line = next(line for line in out.splitlines() if line.startswith("serve:"))
    assert set(serve_line.split()[1:]) == {"status", "stop"}
    chat_line = next(line for line in out.splitlines() if line.startswith("chat:"))
    assert set(chat_line.split()[1:]) == {"--agent", "--agents-dir"}


def test_python_dash_m_answers_the_same_completion_variable(tmp_path: Path) -> None:
    """The scripts name ``duragent``; ``python -m duragent`` must answer the same variable."""
    env = {
        **_shell_env(tmp_path),
        COMPLETE_VAR: "complete_zsh",
        "_TYPER_COMPLETE_ARGS": "duragent serve reload",
    }
    out = subprocess.run(
        [sys.executable, "-m", "duragent"], env=env, capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0, out.stderr
    assert "reload-agents" in out.stdout
