"""The one list of what a tool may never change: an agent folder's protected entries."""

from __future__ import annotations

from pathlib import Path

from duragent.agents.protected import agent_entries


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
