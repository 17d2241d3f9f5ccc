"""The one list of what a tool may never change: an agent folder's protected entries."""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent.agents import load_agent
from duragent.agents.protected import agent_entries, in_files_folder
from duragent.errors import ConfigErrors


def test_every_file_agent_yaml_names_protects_its_top_level_entry(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(
        "kind: Agent\nspec:\n  soul: ./prompts/soul.md\n  instructions: RULES.md\n"
        "  skills_dir: ./my-skills\n  tools:\n"
        "    - {type: cli, name: x, command: bin/x.sh, readme: docs/x.md}\n"
        "  system_prompt: ../shared/prompt.md\n"
    )
    entries = agent_entries(tmp_path)
    assert entries.read_only == (
        "agent.yaml",
        "SOUL.md",
        "SYSTEM_PROMPT.md",
        "INSTRUCTIONS.md",
        "skills",
        "directives",
        "tools",
        "prompts",
        "RULES.md",
        "my-skills",
        "bin",
        "docs",
    )  # ../shared is outside the folder: not shown in the sandbox at all
    assert entries.hidden == ("policy.yaml", "policy.local.yaml", ".env")
    assert set(entries.folders) == {"skills", "directives", "tools", "prompts", "my-skills"} | {
        "bin",
        "docs",
    }
    assert not entries.whole_folder


def test_a_definition_that_is_the_folder_itself_or_unreadable_protects_the_whole_folder(
    tmp_path: Path,
) -> None:
    (tmp_path / "agent.yaml").write_text("spec:\n  skills_dir: ./\n")
    assert agent_entries(tmp_path).whole_folder
    (tmp_path / "agent.yaml").write_text("spec: [unclosed\n")
    assert agent_entries(tmp_path).whole_folder


AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: a
spec:
  model:
    provider: offline
    name: duragent-offline
"""


def agent_naming(folder: Path, spec: str) -> Path:
    """An agent folder ``a`` whose ``agent.yaml`` adds ``spec`` (indented) to ``AGENT``."""
    agent = folder / "a"
    agent.mkdir()
    (agent / "agent.yaml").write_text(AGENT + "".join(f"  {line}\n" for line in spec.splitlines()))
    return agent


@pytest.mark.parametrize(
    ("spec", "field", "line"),
    [
        ("soul: files/s1/soul.md", "spec.soul", 9),
        ("system_prompt: ./x/../files/prompt.md", "spec.system_prompt", 9),
        ("skills_dir: files", "spec.skills_dir", 9),
        (
            "tools:\n  - {type: cli, name: t, command: tools/t/run, readme: files/t.md}",
            "spec.tools[0].readme",
            10,
        ),
    ],
)
def test_a_definition_path_in_the_files_folder_is_refused_with_its_field(
    tmp_path: Path, spec: str, field: str, line: int
) -> None:
    agent = agent_naming(tmp_path, spec)
    for name in ("files/s1/soul.md", "files/prompt.md", "files/t.md", "tools/t/run"):
        (agent / name).parent.mkdir(parents=True, exist_ok=True)
        (agent / name).write_text("x")
    with pytest.raises(ConfigErrors) as info:
        load_agent(agent)
    (error,) = info.value.errors
    assert (error.field, error.line) == (field, line)
    assert "files folder" in error.reason
    assert error.fix is not None
    assert "files/" in error.fix
    assert agent_entries(agent).whole_folder  # until fixed, tools may change nothing of it


def test_a_prompt_that_is_a_symlink_into_the_files_folder_is_refused(tmp_path: Path) -> None:
    agent = agent_naming(tmp_path, "soul: SOUL.md")
    (agent / "files" / "s1").mkdir(parents=True)
    (agent / "files" / "s1" / "soul.md").write_text("written by a tool")
    (agent / "SOUL.md").symlink_to(agent / "files" / "s1" / "soul.md")
    with pytest.raises(ConfigErrors) as info:
        load_agent(agent)
    assert [e.field for e in info.value.errors] == ["spec.soul"]


def test_files_beside_the_definition_are_fine_and_files_is_no_protected_entry(
    tmp_path: Path,
) -> None:
    agent = agent_naming(tmp_path, "soul: ./SOUL.md\nskills_dir: ./files-of-skills")
    (agent / "SOUL.md").write_text("be kind")
    (agent / "files" / "s1").mkdir(parents=True)
    assert load_agent(agent).soul == "be kind"
    assert not in_files_folder(agent, "./files-of-skills")
    assert in_files_folder(agent, "files")
    entries = agent_entries(agent)
    assert "files" not in entries.names
    assert not entries.whole_folder
