"""``login`` and ``upgrade``: present, as in the reference, and honest about what they do here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from duragent import __version__
from duragent.cli.main import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


def test_login_says_which_variable_holds_the_key_instead_of_pretending() -> None:
    result = runner.invoke(app, ["login", "anthropic"])
    assert result.exit_code == 1
    assert "login` is not supported" in result.stderr
    assert "export ANTHROPIC_API_KEY=" in result.stderr
    assert "auth.json is not read" in result.stderr


def test_login_to_an_unknown_provider_lists_the_known_ones() -> None:
    result = runner.invoke(app, ["login", "nosuch"])
    assert result.exit_code == 1
    assert "unknown provider 'nosuch'" in result.stderr
    assert "openai" in result.stderr


def test_upgrade_in_a_git_checkout_says_to_pull_and_reinstall_not_to_use_the_index() -> None:
    result = runner.invoke(app, ["upgrade"])
    assert result.exit_code == 0, result.output
    assert f"duragent {__version__} runs from the git checkout {ROOT}" in result.stdout
    pull = f"upgrade with: git -C {ROOT} pull && {sys.executable} -m pip install -e {ROOT}"
    assert pull in result.stdout  # the test suite runs an editable install of the checkout
    assert "install -U duragent" not in result.stdout


def test_upgrade_json_in_a_git_checkout_names_it_and_checks_with_git() -> None:
    result = runner.invoke(app, ["upgrade", "--check", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["install"], data["source"], data["action"]) == ("git", str(ROOT), "check")
    assert data["command"] == f"git -C {ROOT} fetch && git -C {ROOT} log --oneline HEAD..@{{u}}"


def test_upgrade_of_a_package_installed_from_the_index_prints_the_pip_command(
    tmp_path: Path,
) -> None:
    """The real CLI run from a copy of the package that is no checkout (as pip installs it)."""
    site = tmp_path / "site-packages"
    shutil.copytree(ROOT / "duragent", site / "duragent", ignore=shutil.ignore_patterns("*.pyc"))
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run(
        [sys.executable, "-m", "duragent", "upgrade", "--version", "v0.6.0"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert f"duragent {__version__} is installed as a Python package." in done.stdout
    assert f"upgrade with: {sys.executable} -m pip install duragent==0.6.0" in done.stdout


@pytest.mark.parametrize("flag", ["--full", "--core"])
def test_upgrade_refuses_a_binary_variant_and_says_what_to_install_instead(flag: str) -> None:
    result = runner.invoke(app, ["upgrade", flag])
    assert result.exit_code == 2
    assert f"{flag} chooses one of the reference's two binaries" in result.stderr
    assert "pip install 'duragent[" in result.stderr


@pytest.mark.parametrize("flags", [["--restart"], ["-c", "duragent.yaml"], ["-p", "8080"]])
def test_upgrade_refuses_to_restart_and_says_how_to_restart_after_upgrading(
    flags: list[str],
) -> None:
    result = runner.invoke(app, ["upgrade", *flags])
    assert result.exit_code == 2
    assert "upgrade never replaces the running code" in result.stderr
    assert "duragent serve stop" in result.stderr
