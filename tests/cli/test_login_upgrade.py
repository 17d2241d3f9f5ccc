"""``login`` and ``upgrade``: present, as in the reference, and honest about what they do here."""

from __future__ import annotations

import json
import sys

from typer.testing import CliRunner

from duragent import __version__
from duragent.cli.main import app

runner = CliRunner()


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


def test_upgrade_prints_the_installed_version_and_the_pip_command() -> None:
    result = runner.invoke(app, ["upgrade"])
    assert result.exit_code == 0, result.output
    assert f"duragent {__version__} is installed" in result.stdout
    assert f"upgrade with: {sys.executable} -m pip install -U duragent" in result.stdout


def test_upgrade_json_pins_a_requested_version() -> None:
    result = runner.invoke(app, ["upgrade", "--version", "v0.6.0", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["current_version"] == __version__
    assert data["command"].endswith("pip install duragent==0.6.0")
    assert data["action"] == "manual"


def test_upgrade_flags_that_replace_a_binary_are_refused_not_ignored() -> None:
    result = runner.invoke(app, ["upgrade", "--full"])
    assert result.exit_code == 2
    assert "--full" in result.stderr
