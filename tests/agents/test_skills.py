"""Skills: ``<skills_dir>/<name>/SKILL.md`` with YAML front matter; bad ones become warnings."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from duragent.agents import load_agent
from duragent.agents.skills import Skill, load_skills, render_skills_block
from duragent.errors import ConfigError

WriteAgent = Callable[..., Path]


def write_skill(skills_dir: Path, dir_name: str, text: str) -> Path:
    path = skills_dir / dir_name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def only_problem(skills_dir: Path) -> ConfigError:
    skills, problems = load_skills(skills_dir)
    assert skills == []
    assert len(problems) == 1, [str(p) for p in problems]
    return problems[0]


def test_valid_skill_loads_with_its_metadata(tmp_path: Path) -> None:
    path = write_skill(
        tmp_path,
        "web-search",
        "---\nname: web-search\ndescription: '  Search the web.  '\n"
        "allowed-tools: bash  web\n---\n\n# Steps\nDo it.\n",
    )

    skills, problems = load_skills(tmp_path)

    assert problems == []
    assert skills == [
        Skill(
            name="web-search",
            description="Search the web.",
            location=path,
            allowed_tools=("bash", "web"),
        )
    ]


def test_title_lines_and_blank_lines_before_front_matter_are_allowed(tmp_path: Path) -> None:
    write_skill(
        tmp_path, "notes", "# Notes\n\n## Sub title\n---\nname: notes\ndescription: d\n---\n"
    )

    skills, problems = load_skills(tmp_path)

    assert problems == []
    assert [s.name for s in skills] == ["notes"]
    assert skills[0].allowed_tools == ()


def test_byte_order_mark_does_not_hide_the_front_matter(tmp_path: Path) -> None:
    path = tmp_path / "bom" / "SKILL.md"
    path.parent.mkdir()
    path.write_bytes(b"\xef\xbb\xbf---\nname: bom\ndescription: d\n---\n")

    skills, problems = load_skills(tmp_path)

    assert problems == []
    assert [s.name for s in skills] == ["bom"]


def test_allowed_tools_given_as_a_yaml_list_are_tool_names(tmp_path: Path) -> None:
    text = "---\nname: s\ndescription: d\nallowed-tools:\n  - bash\n  - web\n---\n"
    write_skill(tmp_path, "s", text)

    skills, problems = load_skills(tmp_path)

    assert problems == []
    assert skills[0].allowed_tools == ("bash", "web")


def test_allowed_tools_of_another_type_is_a_problem(tmp_path: Path) -> None:
    path = write_skill(tmp_path, "s", "---\nname: s\ndescription: d\nallowed-tools: 5\n---\n")

    err = only_problem(tmp_path)

    assert str(err) == (
        f"{path}: allowed-tools: allowed-tools must be a space-separated string of tool names "
        "(got 5)"
    )


def test_skills_are_listed_in_directory_name_order(tmp_path: Path) -> None:
    for name in ("zz", "aa", "mm"):
        write_skill(tmp_path, name, f"---\nname: {name}\ndescription: {name}\n---\n")

    skills, _ = load_skills(tmp_path)

    assert [s.name for s in skills] == ["aa", "mm", "zz"]


def test_name_must_equal_the_directory_name(tmp_path: Path) -> None:
    path = write_skill(tmp_path, "folder", "---\nname: other\ndescription: d\n---\n")

    err = only_problem(tmp_path)

    assert str(err) == (
        f"{path}: name: skill name must equal its directory name (got 'other'). "
        "Fix: rename the directory or set name: folder"
    )


@pytest.mark.parametrize("name", ["Web_Search", "UPPER", "has space", "a" * 65, "", "12.5"])
def test_bad_skill_name_is_a_problem_showing_the_rule(tmp_path: Path, name: str) -> None:
    path = write_skill(tmp_path, "x", f"---\nname: '{name}'\ndescription: d\n---\n")

    err = only_problem(tmp_path)

    assert (err.field, err.value) == ("name", name)
    assert str(err) == (
        f"{path}: name: invalid skill name (got {name!r}; "
        "allowed: 1-64 characters of a-z, 0-9 and '-')"
    )


def test_missing_name_is_a_problem(tmp_path: Path) -> None:
    write_skill(tmp_path, "x", "---\ndescription: d\n---\n")

    err = only_problem(tmp_path)

    assert (err.field, err.value, err.reason) == ("name", None, "invalid skill name")


def test_sixty_four_character_name_is_allowed(tmp_path: Path) -> None:
    name = "a" * 64
    write_skill(tmp_path, name, f"---\nname: {name}\ndescription: d\n---\n")

    skills, problems = load_skills(tmp_path)

    assert (len(skills), problems) == (1, [])


@pytest.mark.parametrize("description", ["", "description: ''\n", "description: '   '\n"])
def test_missing_or_blank_description_is_a_problem(tmp_path: Path, description: str) -> None:
    path = write_skill(tmp_path, "x", f"---\nname: x\n{description}---\n")

    assert str(only_problem(tmp_path)) == f"{path}: description: description is required"


def test_file_without_front_matter_is_a_problem(tmp_path: Path) -> None:
    path = write_skill(tmp_path, "x", "# Title\n\nJust text.\n")

    assert str(only_problem(tmp_path)) == (
        f"{path}: no YAML front matter. Fix: start the file with '---', name, description, '---'"
    )


def test_unclosed_front_matter_points_at_its_opening_line(tmp_path: Path) -> None:
    path = write_skill(tmp_path, "x", "# Title\n\n---\nname: x\ndescription: d\n")

    assert str(only_problem(tmp_path)) == (
        f"{path}:3: front matter is not closed. "
        "Fix: end the front matter with a line holding only '---'"
    )


def test_front_matter_that_is_not_a_mapping_is_a_problem(tmp_path: Path) -> None:
    path = write_skill(tmp_path, "x", "---\n- a\n- b\n---\n")

    assert str(only_problem(tmp_path)) == f"{path}: front matter must be a mapping"


def test_front_matter_with_invalid_yaml_is_a_problem(tmp_path: Path) -> None:
    path = write_skill(tmp_path, "x", "---\nname: [x\n---\n")

    err = only_problem(tmp_path)

    assert err.file == path
    assert err.reason.startswith("front matter is not valid YAML: ")


def test_skill_file_that_is_not_utf8_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "x" / "SKILL.md"
    path.parent.mkdir()
    path.write_bytes(b"---\nname: x\ndescription: caf\xe9\n---\n")

    assert str(only_problem(tmp_path)) == f"{path}: not valid UTF-8 (invalid continuation byte)"


def test_directories_without_skill_md_and_missing_skills_dir_are_ignored(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "file.txt").write_text("x", encoding="utf-8")

    assert load_skills(tmp_path) == ([], [])
    assert load_skills(tmp_path / "missing") == ([], [])


def test_invalid_skills_become_agent_warnings_and_do_not_stop_loading(
    write_agent: WriteAgent,
) -> None:
    folder = write_agent("a")
    skills = folder / "skills"
    good = write_skill(skills, "good", "---\nname: good\ndescription: Works.\n---\n")
    bad_name = write_skill(skills, "bad", "---\nname: Bad\ndescription: d\n---\n")
    no_desc = write_skill(skills, "nodesc", "---\nname: nodesc\n---\n")

    agent = load_agent(folder)

    assert [(s.name, s.location) for s in agent.skills] == [("good", good.resolve())]
    assert [(w.file, w.reason) for w in agent.warnings] == [
        (bad_name.resolve(), "invalid skill name"),
        (no_desc.resolve(), "description is required"),
    ]


def test_custom_skills_dir_is_relative_to_the_agent(write_agent: WriteAgent) -> None:
    text = (
        "apiVersion: duragent/v1alpha1\nkind: Agent\nmetadata:\n  name: a\nspec:\n"
        "  model:\n    provider: offline\n    name: m\n  skills_dir: ../shared-skills\n"
    )
    folder = write_agent("a", text)
    write_skill(
        folder.parent / "shared-skills", "shared", "---\nname: shared\ndescription: d\n---\n"
    )
    write_skill(folder / "skills", "ignored", "---\nname: ignored\ndescription: d\n---\n")

    agent = load_agent(folder)

    assert [s.name for s in agent.skills] == ["shared"]


def test_render_skills_block_lists_name_description_and_location() -> None:
    skills = [
        Skill(name="a", description="First.", location=Path("/s/a/SKILL.md")),
        Skill(
            name="b", description="Second.", location=Path("/s/b/SKILL.md"), allowed_tools=("x",)
        ),
    ]

    assert render_skills_block(skills) == (
        "<available_skills>\n"
        "<skill><name>a</name><description>First.</description>"
        "<location>/s/a/SKILL.md</location></skill>\n"
        "<skill><name>b</name><description>Second.</description>"
        "<location>/s/b/SKILL.md</location></skill>\n"
        "</available_skills>"
    )


def test_render_skills_block_of_no_skills_is_empty() -> None:
    assert render_skills_block([]) == ""
