"""init, agent list/create, doctor and --version through the real command-line parser."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from duragent import __version__
from duragent.agents import load_catalog
from duragent.cli.main import app
from duragent.config import load_workspace

runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def test_version_prints_the_package_version() -> None:
    code, out = run("--version")
    assert code == 0
    assert out.strip() == f"duragent {__version__} (python)"


def test_init_scaffolds_a_workspace_that_loads(tmp_path: Path) -> None:
    code, out = run("init", str(tmp_path), "--agent-name", "helper", "--no-interactive")
    assert code == 0, out
    for rel in (
        "duragent.yaml",
        ".duragent/policy.yaml",
        ".duragent/agents/helper/agent.yaml",
        ".duragent/agents/helper/policy.yaml",
        ".duragent/agents/helper/SOUL.md",
        ".duragent/agents/helper/SYSTEM_PROMPT.md",
    ):
        assert (tmp_path / rel).is_file(), rel
    for rel in ("sessions", "memory/world", "directives", "schedules", "artifacts"):
        assert (tmp_path / ".duragent" / rel).is_dir(), rel
    assert load_workspace(tmp_path / "duragent.yaml").exists
    catalog = load_catalog(tmp_path / ".duragent" / "agents")
    assert catalog.names() == ["helper"]
    assert not catalog.broken
    assert "{{date}}" in (tmp_path / ".duragent/agents/helper/SYSTEM_PROMPT.md").read_text()


def test_init_never_overwrites_an_existing_file(tmp_path: Path) -> None:
    (tmp_path / "duragent.yaml").write_text("# mine\n")
    code, out = run("init", str(tmp_path), "--no-interactive")
    assert code == 0
    assert (tmp_path / "duragent.yaml").read_text() == "# mine\n"
    assert f"kept existing {tmp_path / 'duragent.yaml'}" in out


def test_init_with_a_keyed_provider_tells_which_variable_to_export(tmp_path: Path) -> None:
    code, out = run("init", str(tmp_path), "--provider", "anthropic", "--no-interactive")
    assert code == 0
    assert "ANTHROPIC_API_KEY" in out
    text = (tmp_path / ".duragent/agents/assistant/agent.yaml").read_text()
    assert "provider: anthropic" in text
    assert "name: claude" in text


def test_init_rejects_an_unknown_provider_in_one_line(tmp_path: Path) -> None:
    code, out = run("init", str(tmp_path), "--provider", "skynet", "--no-interactive")
    assert code == 1
    assert "error: unknown provider 'skynet'" in out


def test_agent_create_adds_an_agent_to_the_workspace(tmp_path: Path) -> None:
    run("init", str(tmp_path), "--no-interactive")
    code, out = run(
        "agent", "create", "second", "-c", str(tmp_path / "duragent.yaml"), "--no-interactive"
    )
    assert code == 0, out
    assert load_catalog(tmp_path / ".duragent" / "agents").names() == ["assistant", "second"]


def test_agent_list_shows_good_and_broken_agents(tmp_path: Path) -> None:
    run("init", str(tmp_path), "--no-interactive")
    broken = tmp_path / ".duragent/agents/broken"
    broken.mkdir()
    (broken / "agent.yaml").write_text("apiVersion: duragent/v9\nkind: Agent\n")
    code, out = run("agent", "list", "-c", str(tmp_path / "duragent.yaml"))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("assistant")
    assert "offline/duragent-offline" in lines[0]
    assert lines[1].startswith("broken")
    assert "BROKEN" in lines[1]


def test_doctor_passes_a_fresh_workspace_with_only_warnings(tmp_path: Path) -> None:
    run("init", str(tmp_path), "--no-interactive")
    code, out = run("doctor", "-c", str(tmp_path / "duragent.yaml"))
    assert code == 0, out
    assert "0 error(s)" in out
    assert "offline model" in out


def test_doctor_reports_every_problem_with_its_fix_and_fails(tmp_path: Path) -> None:
    run("init", str(tmp_path), "--provider", "openai", "--no-interactive")
    config = tmp_path / "duragent.yaml"
    config.write_text(
        "gateways:\n  telegram:\n    enabled: true\nroutes:\n  - agent: ghost\n"
        "server:\n  host: 0.0.0.0\n"
    )
    broken = tmp_path / ".duragent/agents/broken"
    broken.mkdir()
    (broken / "agent.yaml").write_text(
        "apiVersion: duragent/v1alpha1\nkind: Agent\nmetadata:\n  name: broken\nspec:\n"
        "  model:\n    provider: openai\n    name: gpt-4o\n  session:\n    context:\n"
        "      max_tool_result_tokens: 0\n"
    )
    result = runner.invoke(app, ["doctor", "-c", str(config)], env={"OPENAI_API_KEY": ""})
    out = result.output
    assert result.exit_code == 1
    assert "spec.session.context.max_tool_result_tokens: must be greater than 0" in out
    assert "agent.yaml:11" in out
    assert "OPENAI_API_KEY is not set" in out
    assert "gateways.telegram.bot_token" in out
    assert f"{config}:5: routes[0].agent: names agent 'ghost', which is not loaded" in out
    assert "no api_token" in out


def test_doctor_json_is_machine_readable(tmp_path: Path) -> None:
    run("init", str(tmp_path), "--no-interactive")
    code, out = run("doctor", "-c", str(tmp_path / "duragent.yaml"), "--format", "json")
    assert code == 0
    findings = json.loads(out)
    assert {f["level"] for f in findings} <= {"ok", "warning", "error"}
    assert any(f["check"] == "agent assistant" for f in findings)


def test_doctor_without_a_workspace_fails_with_a_fix(tmp_path: Path) -> None:
    code, out = run("doctor", "-c", str(tmp_path / "duragent.yaml"))
    assert code == 1
    assert "duragent init" in out
