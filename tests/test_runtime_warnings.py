"""`serve` says at start what would otherwise surprise later: a missing key, an unserved
front end (issue 21 items 9 and 10)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from duragent.cli.main import app
from duragent.config import load_workspace
from duragent.runtime import Runtime

OPENAI_AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: helper
spec:
  model:
    provider: openai
    name: gpt-4o-mini
"""


def workspace(root: Path, config: str = "") -> Path:
    (root / "duragent.yaml").write_text(config)
    folder = root / ".duragent" / "agents" / "helper"
    folder.mkdir(parents=True)
    (folder / "agent.yaml").write_text(OPENAI_AGENT)
    return root / "duragent.yaml"


def test_loading_an_agent_whose_provider_key_is_missing_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = Runtime(load_workspace(workspace(tmp_path)), env={})
    with caplog.at_level(logging.WARNING, logger="duragent.runtime"):
        runtime.reload_agents()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(
        "agent 'helper' cannot call its model: OPENAI_API_KEY is not set" in w for w in warnings
    ), warnings


def test_an_agent_with_its_key_loads_without_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = Runtime(load_workspace(workspace(tmp_path)), env={"OPENAI_API_KEY": "sk-test"})
    with caplog.at_level(logging.WARNING, logger="duragent.runtime"):
        runtime.reload_agents()
    assert not [r for r in caplog.records if "cannot call its model" in r.getMessage()]


DISCORD = "gateways:\n  discord:\n    bot_token: abc\n  telegram:\n    enabled: false\n"
DISCORD_TOKEN = "MTI0MjQyNDI0MjQyNDI0MjQy.GAbc12.abcdefghijklmnopqrstuvwxyz0123456789AB"


async def test_serve_fails_only_the_discord_gateway_when_its_token_is_malformed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = Runtime(
        load_workspace(workspace(tmp_path, DISCORD)), port=0, env={"OPENAI_API_KEY": "k"}
    )
    with caplog.at_level(logging.WARNING):
        await runtime.start()
        states = runtime.gateway_states()
        port = runtime.http_port
        await runtime.aclose()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("gateways.discord.bot_token does not look like" in m for m in errors), errors
    assert states["discord"].startswith("failed: gateways.discord.bot_token"), states
    assert port is not None  # HTTP served all the same
    assert not any("is not served" in r.getMessage() for r in caplog.records)


def test_doctor_says_a_discord_token_of_the_wrong_shape_is_an_error(tmp_path: Path) -> None:
    config = workspace(tmp_path, DISCORD)
    result = CliRunner().invoke(app, ["doctor", "-c", str(config)], env={"OPENAI_API_KEY": "k"})
    assert result.exit_code == 1, result.output
    assert "[gateway discord] gateways.discord.bot_token does not look like" in result.output
    assert "disabled (enabled: false)" in result.output


def test_doctor_says_which_discord_gateway_serve_will_start(tmp_path: Path) -> None:
    text = f"gateways:\n  discord:\n    bot_token: '{DISCORD_TOKEN}'\n"
    config = workspace(tmp_path, text)
    result = CliRunner().invoke(app, ["doctor", "-c", str(config)], env={"OPENAI_API_KEY": "k"})
    assert result.exit_code == 0, result.output
    assert "[gateway discord] enabled (discord.com)" in result.output
    assert DISCORD_TOKEN not in result.output


def test_doctor_says_a_telegram_token_of_the_wrong_shape_is_an_error(tmp_path: Path) -> None:
    config = workspace(tmp_path, "gateways:\n  telegram:\n    bot_token: abc\n")
    result = CliRunner().invoke(app, ["doctor", "-c", str(config)], env={"OPENAI_API_KEY": "k"})
    assert result.exit_code == 1, result.output
    assert "does not look like a bot token" in result.output


def test_doctor_says_which_telegram_gateway_serve_will_start(tmp_path: Path) -> None:
    token = "123456:" + "A" * 35
    text = (
        f"gateways:\n  telegram:\n    bot_token: '{token}'\n    base_url: http://localhost:8081\n"
    )
    config = workspace(tmp_path, text)
    result = CliRunner().invoke(app, ["doctor", "-c", str(config)], env={"OPENAI_API_KEY": "k"})
    assert result.exit_code == 0, result.output
    assert "[gateway telegram] enabled (long polling, http://localhost:8081)" in result.output
    assert token not in result.output
