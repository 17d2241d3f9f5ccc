"""``-h`` wherever ``--help`` works, and ``completions <shell>`` scripts that really complete."""

from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from duragent.cli.completions import COMPLETE_VAR
from duragent.cli.main import app
from tests.system_packages import apt_install

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


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish", "powershell", "elvish"])
def test_completions_print_a_script_that_calls_duragent_back(shell: str) -> None:
    result = runner.invoke(app, ["completions", shell])
    assert result.exit_code == 0, result.output
    assert COMPLETE_VAR in result.stdout
    assert "duragent" in result.stdout


def test_an_unknown_shell_is_a_usage_error() -> None:
    result = runner.invoke(app, ["completions", "tcsh"])
    assert result.exit_code == 2
    assert "tcsh" in result.output


def test_a_script_loaded_by_a_shells_start_up_file_prints_no_hint(tmp_path: Path) -> None:
    """``eval "$(duragent completions bash)"`` in ~/.bashrc must not greet every new shell."""
    done = subprocess.run(
        ["duragent", "completions", "bash"],
        env=_shell_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


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
        timeout=120,
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
        [sys.executable, "-m", "duragent"], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "reload-agents" in out.stdout


def _interactive(argv: list[str], env: dict[str, str], cwd: Path) -> str:
    """What an interactive shell (on a terminal of its own) prints until it exits."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd)
    os.close(slave)
    out = b""
    try:
        while select.select([master], [], [], 60)[0]:
            try:
                data = os.read(master, 4096)
            except OSError:  # the terminal's other end closed: the shell exited
                break
            if not data:
                break
            out += data
    finally:
        os.close(master)
        proc.kill()
        proc.wait()
    return out.decode(errors="replace")


@pytest.fixture(scope="session")
def elvish() -> None:
    """Elvish, installed once per run where the suite may (``tests.system_packages``)."""
    if shutil.which("elvish") is None:
        why = apt_install("elvish")
        if why is not None:
            pytest.skip(why)


@pytest.mark.usefixtures("elvish")
def test_the_elvish_script_completes_subcommands_flags_and_paths(tmp_path: Path) -> None:
    env = {**_shell_env(tmp_path), "HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(tmp_path)}
    (tmp_path / "my-workspace").mkdir()
    rc = tmp_path / "rc.elv"  # what the hint says to put in ~/.config/elvish/rc.elv, then
    rc.write_text(
        "eval (duragent completions elvish | slurp)\n"
        "var complete = $edit:completion:arg-completer[duragent]\n"
        "echo 'serve:' ($complete duragent serve s)\n"
        "echo 'chat:' ($complete duragent chat --age)\n"
        "echo 'init:' ($complete duragent init my)\n"
        "exit 0\n"
    )
    out = _interactive(["elvish", "-rc", str(rc)], env, tmp_path)
    lines = {line.split(":")[0]: line for line in out.splitlines() if ":" in line}
    assert set(lines["serve"].split()[1:]) == {"status", "stop"}, out
    assert set(lines["chat"].split()[1:]) == {"--agent", "--agents-dir"}, out
    assert "my-workspace/" in lines["init"], out  # a path, through Elvish's own completion
