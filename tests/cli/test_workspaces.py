"""Commands run where README leaves the reader: the clone's root, which is no workspace (issue 39).

README's first command serves ``examples/duragent.yaml`` from the clone's root. Every command
run there without ``-c`` used to assume the current folder: ``doctor``, ``serve`` and
``session list`` told the reader to run ``duragent init``, ``agent list`` said "no agents"
and ``serve status`` "No server running" (both exit 0) while the example's server ran. Each
now fails alike, naming the ``-c`` to add and the server running there.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cli.test_serve import free_port
from tests.cli.test_serve_admin import Ran, cli, serving

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

COMMANDS = [
    ["serve"],
    ["serve", "status"],
    ["serve", "stop"],
    ["doctor"],
    ["agent", "list"],
    ["agent", "create", "helper", "--no-interactive"],
    ["session", "list"],
    ["session", "restore", "some-id"],
    ["schedule", "list"],
    ["pairing", "list"],
]


@pytest.fixture
def clone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder laid out like the clone's root: the example workspace in ``examples/``."""
    monkeypatch.delenv("DURAGENT_CONFIG", raising=False)
    root = tmp_path / "duragent"
    shutil.copytree(EXAMPLES, root / "examples", ignore=shutil.ignore_patterns("sessions"))
    (root / "duragent").mkdir()  # the package's folder: no workspace
    return root


def said(result: Ran) -> str:
    return result.stdout + result.stderr


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_command_at_the_clones_root_fails_naming_the_c_to_add(
    clone: Path, command: list[str]
) -> None:
    result = cli(*command, cwd=clone)

    assert result.returncode == 1, said(result)
    assert f"no workspace in {clone}" in said(result)
    assert "pass -c examples/duragent.yaml" in said(result)
    assert not (clone / ".duragent").exists()  # nothing was made where nobody asked


def test_the_same_command_with_that_c_works(clone: Path) -> None:
    result = cli("agent", "list", "-c", "examples/duragent.yaml", cwd=clone)

    assert result.returncode == 0, said(result)
    assert result.stdout.startswith("assistant")


def test_serve_status_at_the_clones_root_names_the_examples_running_server(clone: Path) -> None:
    example = clone / "examples"
    (example / "duragent.yaml").write_text(f"server:\n  port: {free_port()}\n")
    with serving(example) as proc:
        status = cli("serve", "status", cwd=clone)
        named = cli("serve", "status", "-c", "examples/duragent.yaml", cwd=clone)

    assert status.returncode == 1
    assert f"pass -c examples/duragent.yaml (its server is running: PID {proc.pid}" in said(status)
    assert named.returncode == 0, said(named)
    assert named.stdout.startswith("Server running on port")
    assert f"PID: {proc.pid}" in named.stdout


def test_with_several_workspaces_nearby_each_is_named(clone: Path) -> None:
    shutil.copytree(clone / "examples", clone / "other", ignore=shutil.ignore_patterns("sessions"))

    result = cli("doctor", cwd=clone)

    assert result.returncode == 1
    assert "pass one of: -c examples/duragent.yaml; -c other/duragent.yaml" in said(result)


def test_inside_a_workspace_s_subfolder_the_workspace_above_is_named(clone: Path) -> None:
    inner = clone / "examples" / ".duragent" / "agents"

    result = cli("agent", "list", cwd=inner)

    assert result.returncode == 1
    assert "pass -c ../../duragent.yaml" in said(result)


def test_a_folder_given_with_c_that_is_no_workspace_is_named(clone: Path) -> None:
    result = cli("agent", "list", "-c", str(clone / "duragent"), cwd=clone)

    assert result.returncode == 1
    assert f"no workspace in {clone / 'duragent'}" in said(result)
    assert f"duragent init {clone / 'duragent'}" in said(result)


def test_the_config_from_duragent_config_is_used_from_anywhere(
    clone: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURAGENT_CONFIG", "examples/duragent.yaml")

    result = cli("agent", "list", cwd=clone)

    assert result.returncode == 0, said(result)
    assert result.stdout.startswith("assistant")


TELEGRAM = "gateways:\n  telegram:\n    bot_token: ${TELEGRAM_BOT_TOKEN}\n"


@pytest.fixture
def with_telegram(clone: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example workspace after README's Telegram step 2, its token not exported here."""
    monkeypatch.delenv("TELEGRAM_BOT_TOKEN", raising=False)
    config = clone / "examples" / "duragent.yaml"
    config.write_text(config.read_text() + TELEGRAM)
    return config


@pytest.mark.parametrize(
    "command",
    [["agent", "create", "helper", "--no-interactive"], ["agent", "list"], ["pairing", "list"]],
    ids=" ".join,
)
def test_a_command_that_needs_no_secret_does_not_fail_on_an_unset_one(
    with_telegram: Path, command: list[str]
) -> None:
    result = cli(*command, "-c", str(with_telegram), cwd=with_telegram.parent)

    assert result.returncode == 0, said(result)
    assert "TELEGRAM_BOT_TOKEN" not in said(result)


def test_agent_create_with_the_token_unset_adds_the_agent(with_telegram: Path) -> None:
    cli(
        "agent",
        "create",
        "helper",
        "-c",
        str(with_telegram),
        "--no-interactive",
        cwd=with_telegram.parent,
    )

    listed = cli("agent", "list", "-c", str(with_telegram), cwd=with_telegram.parent)
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["assistant", "helper"]


@pytest.mark.parametrize("command", [["doctor"], ["serve"]], ids=" ".join)
def test_serve_and_doctor_still_report_the_unset_token(
    with_telegram: Path, command: list[str]
) -> None:
    result = cli(*command, "-c", str(with_telegram), cwd=with_telegram.parent)

    assert result.returncode == 1
    assert f"{with_telegram}:" in said(result)
    assert "environment variable TELEGRAM_BOT_TOKEN is not set" in said(result)


def test_a_command_still_fails_on_an_unset_variable_in_a_field_it_uses(
    clone: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("API_TOKEN", raising=False)
    monkeypatch.delenv("STATE_DIR", raising=False)
    config = clone / "examples" / "duragent.yaml"
    config.write_text("server:\n  api_token: ${API_TOKEN}\n")

    session = cli("session", "list", "-c", str(config), cwd=clone)
    config.write_text("workspace: ${STATE_DIR}\n")
    agents = cli("agent", "list", "-c", str(config), cwd=clone)

    assert session.returncode == 1
    assert "environment variable API_TOKEN is not set" in said(session)  # the server's token
    assert agents.returncode == 1
    assert "environment variable STATE_DIR is not set" in said(agents)  # where the files are
