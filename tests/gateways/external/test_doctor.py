"""``duragent doctor`` says which program each external gateway would run, or why it cannot."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from duragent.cli.main import app
from tests.test_runtime_warnings import workspace


def test_doctor_names_the_program_an_external_gateway_runs(tmp_path: Path) -> None:
    program = tmp_path / "gateways" / "slack"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    text = "gateways:\n  external:\n    - {name: slack, command: gateways/slack, args: [-v]}\n"
    config = workspace(tmp_path, text)
    result = CliRunner().invoke(app, ["doctor", "-c", str(config)], env={"OPENAI_API_KEY": "k"})
    assert result.exit_code == 0, result.output
    assert f"[gateway slack] external: {program} -v (restart: on_failure)" in result.output


def test_doctor_says_a_missing_gateway_program_is_an_error(tmp_path: Path) -> None:
    text = "gateways:\n  external:\n    - {name: slack, command: ./nowhere/slack}\n"
    config = workspace(tmp_path, text)
    result = CliRunner().invoke(app, ["doctor", "-c", str(config)], env={"OPENAI_API_KEY": "k"})
    assert result.exit_code == 1, result.output
    assert (
        "gateways.external[0].command: gateway 'slack': the command './nowhere/slack' was not found"
        in (result.output)
    )
