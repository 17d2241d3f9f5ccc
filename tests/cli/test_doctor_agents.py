"""``doctor`` says a warning that applies to several agents once, naming them (issue 39)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from duragent.cli.main import app
from tests.cli.test_doctor import agent_yaml, workspace


def doctor(config: Path, **env: str | None) -> tuple[int, list[str]]:
    result = CliRunner().invoke(app, ["doctor", "-c", str(config)], env=env or None)
    return result.exit_code, result.output.splitlines()


def test_the_offline_model_warning_is_one_line_naming_every_agent_that_uses_it(
    tmp_path: Path,
) -> None:
    names = ("ada", "bob", "cy")
    config = workspace(tmp_path, "", **{n: agent_yaml(n) for n in names})

    code, lines = doctor(config)

    assert code == 0
    told = [line for line in lines if "offline model: replies are fixed text" in line]
    assert told == ["! [agents ada, bob, cy] use the offline model: replies are fixed text, not AI"]
    fix = lines[lines.index(told[0]) + 1]
    assert fix == (
        f"    fix: set spec.model in each one's agent.yaml (in {tmp_path / '.duragent' / 'agents'})"
        " to a real provider"
    )


def test_one_agent_on_the_offline_model_is_named_with_its_file(tmp_path: Path) -> None:
    config = workspace(tmp_path, "", ada=agent_yaml("ada"))

    _, lines = doctor(config)

    at = lines.index("! [agent ada] uses the offline model: replies are fixed text, not AI")
    file = tmp_path / ".duragent" / "agents" / "ada" / "agent.yaml"
    assert lines[at + 1] == f"    fix: set spec.model in {file} to a real provider"


def test_a_key_several_agents_need_is_one_error_naming_them(tmp_path: Path) -> None:
    openai = agent_yaml("x").replace("provider: offline", "provider: openai")
    config = workspace(
        tmp_path,
        "",
        one=openai.replace("name: x", "name: one"),
        two=openai.replace("name: x", "name: two"),
    )

    code, lines = doctor(config, OPENAI_API_KEY=None)

    assert code == 1
    told = [line for line in lines if "OPENAI_API_KEY" in line]
    assert len(told) == 1, lines
    assert told[0].startswith("✗ [agents one, two] OPENAI_API_KEY is not set")
