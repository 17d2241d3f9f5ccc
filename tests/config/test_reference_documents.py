"""The reference's own documented configurations load (issue 19).

``tests/fixtures/reference`` holds files of the same shape as the reference's templates
(``agent.yaml``, ``duragent.yaml``, every commented option switched on) and its configuration
guide's full ``duragent.yaml`` example: a user moving a workspace over writes exactly these.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from duragent.agents.loader import load_agent
from duragent.config import load_workspace
from duragent.errors import ConfigError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "reference"
TOKENS = {"REF_TELEGRAM_TOKEN": "123:abc", "REF_DISCORD_TOKEN": "a.b.c"}


def template_agent(tmp_path: Path) -> Path:
    """The template agent in a folder of its own, with the files it names."""
    folder = tmp_path / "ref-agent"
    folder.mkdir()
    shutil.copy(FIXTURES / "agent.yaml", folder / "agent.yaml")
    for name in ("SOUL.md", "SYSTEM_PROMPT.md", "INSTRUCTIONS.md"):
        (folder / name).write_text(f"# {name}\n")
    (folder / "tools").mkdir()
    (folder / "tools" / "my-tool.sh").write_text("#!/bin/sh\necho hi\n")
    return folder


def test_the_reference_agent_template_with_every_option_on_loads(tmp_path: Path) -> None:
    agent = load_agent(template_agent(tmp_path))
    hooks = agent.spec.hooks
    assert [h.type for h in hooks.before_tool] == ["depends_on", "skip_duplicate"]
    assert hooks.after_tool[1].unless == {"wait": True}  # a YAML bool, kept a bool
    assert agent.spec.session.context.tool_result_truncation == "both"
    assert [t.name for t in agent.spec.tools][-1] == "my-tool"


@pytest.mark.parametrize("value", ["true", "3", '"fast"', "[1, 2]", "{a: 1}", "null"])
def test_an_unless_value_may_be_any_yaml_value(tmp_path: Path, value: str) -> None:
    folder = template_agent(tmp_path)
    text = (folder / "agent.yaml").read_text().replace("wait: true", f"wait: {value}")
    (folder / "agent.yaml").write_text(text)
    assert "wait" in load_agent(folder).spec.hooks.after_tool[1].unless


def test_the_configuration_guide_example_loads_with_empty_sections_as_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in TOKENS.items():
        monkeypatch.setenv(name, value)
    config = tmp_path / "duragent.yaml"
    shutil.copy(FIXTURES / "duragent.guide.yaml", config)
    ws = load_workspace(config)
    assert ws.paths.sessions == tmp_path / ".duragent" / "sessions"
    assert ws.paths.world_memory == tmp_path / ".duragent" / "memory" / "world"
    assert [r.agent for r in ws.config.routes] == ["personal", "moderator", "fallback"]
    # Its external gateway shares the built-in Discord's name: said, and not started.
    assert ws.config.gateways.shadowed() == [0]
    (warning,) = ws.warnings
    assert warning.field == "gateways.external[0].name"
    assert "is not started" in warning.reason
    assert warning.fix


def test_the_reference_workspace_template_with_every_option_on_loads(tmp_path: Path) -> None:
    config = tmp_path / "duragent.yaml"
    shutil.copy(FIXTURES / "duragent.template.yaml", config)
    ws = load_workspace(config)
    assert ws.config.server.port == 8282
    assert ws.config.sessions.compaction == "disabled"
    assert ws.warnings == ()


@pytest.mark.parametrize(
    "section", ["services:\n  session:\n", "world_memory:\n", "server:\n", "routes:\n"]
)
def test_a_workspace_section_left_empty_means_its_defaults(tmp_path: Path, section: str) -> None:
    config = tmp_path / "duragent.yaml"
    config.write_text(section + "    # everything commented out\n")
    assert load_workspace(config).config.server.port == 8080


def test_an_agent_section_left_empty_means_its_defaults_but_memory_stays_off(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "bot"
    folder.mkdir()
    (folder / "agent.yaml").write_text(
        "apiVersion: duragent/v1alpha1\nkind: Agent\nmetadata:\n  name: bot\nspec:\n"
        "  model:\n    provider: offline\n    name: echo\n"
        "  hooks:\n  session:\n  tools:\n  memory:\n"
    )
    spec = load_agent(folder).spec
    assert spec.hooks.after_tool == []
    assert spec.tools == []
    assert spec.session.max_tool_iterations == 10
    assert spec.memory is None  # `memory:` alone is still "no memory", as in the reference


def test_an_empty_scalar_is_still_an_error(tmp_path: Path) -> None:
    config = tmp_path / "duragent.yaml"
    config.write_text("server:\n  port:\n")
    with pytest.raises(ConfigError, match=r"server\.port"):
        load_workspace(config)
