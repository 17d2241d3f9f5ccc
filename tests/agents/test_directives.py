"""Directives: workspace and agent ``*.md`` rules, sorted, merged and rendered."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from duragent.agents import load_agent
from duragent.agents.directives import (
    MEMORY_DIRECTIVE,
    Directive,
    load_directives,
    render_directives_block,
)
from duragent.agents.system_prompt import build_system_prompt
from tests.conftest import AGENT_YAML

WriteAgent = Callable[..., Path]


def write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def test_workspace_then_agent_directives_each_sorted_by_filename(tmp_path: Path) -> None:
    ws, agent = tmp_path / "ws", tmp_path / "agent"
    write(ws, "b-second.md", "Workspace two.")
    write(ws, "a-first.md", "Workspace one.")
    write(agent, "z-last.md", "Agent two.")
    write(agent, "c-agent.md", "Agent one.")

    directives = load_directives(ws, agent)

    assert [(d.source, d.text) for d in directives] == [
        ("a-first", "Workspace one."),
        ("b-second", "Workspace two."),
        ("c-agent", "Agent one."),
        ("z-last", "Agent two."),
    ]
    assert directives[0].path == ws / "a-first.md"
    assert directives[2].path == agent / "c-agent.md"


def test_text_is_stripped_and_empty_files_are_skipped(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "empty.md", "")
    write(ws, "blank.md", "  \n\t\n")
    write(ws, "real.md", "\n  Keep answers short.\n\n")

    assert load_directives(ws, tmp_path / "none") == [
        Directive(source="real", text="Keep answers short.", path=ws / "real.md")
    ]


def test_only_markdown_files_are_read(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "rule.md", "Yes.")
    write(ws, "rule.txt", "No.")
    write(ws, "rule.md.bak", "No.")
    write(ws, "README", "No.")

    assert [d.source for d in load_directives(ws, tmp_path / "none")] == ["rule"]


def test_agent_file_with_the_same_stem_overrides_the_workspace_one(tmp_path: Path) -> None:
    ws, agent = tmp_path / "ws", tmp_path / "agent"
    write(ws, "memory.md", "Workspace memory rule.")
    write(ws, "tone.md", "Be kind.")
    write(agent, "memory.md", "Agent memory rule.")

    directives = load_directives(ws, agent)

    assert [(d.source, d.text) for d in directives] == [
        ("tone", "Be kind."),
        ("memory", "Agent memory rule."),
    ]


def test_empty_agent_file_does_not_override_the_workspace_one(tmp_path: Path) -> None:
    ws, agent = tmp_path / "ws", tmp_path / "agent"
    write(ws, "memory.md", "Workspace memory rule.")
    write(agent, "memory.md", "\n")

    assert [d.text for d in load_directives(ws, agent)] == ["Workspace memory rule."]


def test_missing_directories_give_no_directives(tmp_path: Path) -> None:
    assert load_directives(tmp_path / "a", tmp_path / "b") == []


def test_subdirectory_named_like_a_markdown_file_is_skipped(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "folder.md").mkdir(parents=True)
    write(ws, "real.md", "Real.")

    assert [d.source for d in load_directives(ws, tmp_path / "none")] == ["real"]


def test_agent_loads_workspace_and_own_directives(write_agent: WriteAgent, tmp_path: Path) -> None:
    ws = tmp_path / ".duragent" / "directives"
    write(ws, "shared.md", "Shared rule.")
    folder = write_agent("a")
    write(folder / "directives", "own.md", "Own rule.")

    with_ws = load_agent(folder, workspace_directives=ws)
    without_ws = load_agent(folder)

    assert [d.text for d in with_ws.directives] == ["Shared rule.", "Own rule."]
    assert [d.text for d in without_ws.directives] == ["Own rule."]


def test_render_directives_block_is_a_heading_and_one_bullet_each() -> None:
    directives = [
        Directive(source="a", text="Be kind.", path=Path("a.md")),
        Directive(source="b", text="Answer in English.", path=Path("b.md")),
    ]

    assert render_directives_block(directives) == (
        "## Directives\n- Be kind.\n- Answer in English."
    )


def test_render_directives_block_of_nothing_is_empty() -> None:
    assert render_directives_block([]) == ""


REMEMBERS = AGENT_YAML.format(name="keeper") + "  memory:\n    backend: filesystem\n"


def test_an_agent_with_memory_is_told_what_its_memory_is_for(write_agent: WriteAgent) -> None:
    agent = load_agent(write_agent("keeper", REMEMBERS))

    assert [d.source for d in agent.directives] == ["memory"]
    prompt = build_system_prompt(agent)
    assert MEMORY_DIRECTIVE in prompt
    assert "`recall`" in prompt
    assert "`remember`" in prompt


def test_an_agent_without_memory_gets_no_memory_directive(write_agent: WriteAgent) -> None:
    agent = load_agent(write_agent("plain"))

    assert agent.directives == ()
    assert MEMORY_DIRECTIVE not in build_system_prompt(agent)


def test_a_memory_directive_file_replaces_the_runtime_one(
    write_agent: WriteAgent, tmp_path: Path
) -> None:
    ws = tmp_path / ".duragent" / "directives"
    write(ws, "memory.md", "Remember only what the user asks you to.")
    agent = load_agent(write_agent("keeper", REMEMBERS), workspace_directives=ws)

    assert [d.text for d in agent.directives] == ["Remember only what the user asks you to."]
    assert MEMORY_DIRECTIVE not in build_system_prompt(agent)
