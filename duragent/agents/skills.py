"""Skills: ``<skills_dir>/<name>/SKILL.md`` files with YAML front matter.

A skill is advertised to the model as name + description + location; the model reads the
file itself when it needs it. Invalid skills are reported as warnings and skipped, so one bad
skill never stops an agent from loading.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from duragent.core.nesting import MAX_NESTING_DEPTH, yaml_too_deep
from duragent.errors import ConfigError

__all__ = ["Skill", "load_skills", "render_skills_block"]

_SKILL_NAME = re.compile(r"^[a-z0-9-]{1,64}$")


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill the agent may read on demand."""

    name: str
    description: str
    location: Path
    allowed_tools: tuple[str, ...] = ()


def _front_matter(text: str, skill_file: Path) -> str:
    lines = text.splitlines()
    i = 0
    while i < len(lines) and (not lines[i].strip() or lines[i].lstrip().startswith("#")):
        i += 1
    if i >= len(lines) or lines[i].strip() != "---":
        raise ConfigError(
            "no YAML front matter",
            file=skill_file,
            fix="start the file with '---', name, description, '---'",
        )
    for j in range(i + 1, len(lines)):
        if lines[j].strip() == "---":
            return "\n".join(lines[i + 1 : j])
    raise ConfigError(
        "front matter is not closed",
        file=skill_file,
        line=i + 1,
        fix="end the front matter with a line holding only '---'",
    )


def _allowed_tools(value: object, skill_file: Path) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(t for v in value for t in v.split())
    raise ConfigError(
        "allowed-tools must be a space-separated string of tool names",
        file=skill_file,
        field="allowed-tools",
        value=value,
    )


def _load_one(skill_file: Path) -> Skill:
    try:
        # utf-8-sig: editors that save a byte-order mark must not hide the front matter.
        text = skill_file.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not valid UTF-8 ({exc.reason})", file=skill_file) from None
    raw = _front_matter(text, skill_file)
    deep = yaml_too_deep(raw)
    if deep is not None:  # libyaml would crash the process (SIGSEGV) on very deep nesting
        raise ConfigError(deep.reason(MAX_NESTING_DEPTH), file=skill_file, line=deep.line + 1)
    try:
        meta = yaml.safe_load(raw) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"front matter is not valid YAML: {exc}", file=skill_file) from None
    if not isinstance(meta, dict):
        raise ConfigError("front matter must be a mapping", file=skill_file)
    name = meta.get("name")
    if not isinstance(name, str) or not _SKILL_NAME.match(name):
        raise ConfigError(
            "invalid skill name",
            file=skill_file,
            field="name",
            value=name,
            allowed="1-64 characters of a-z, 0-9 and '-'",
        )
    if name != skill_file.parent.name:
        raise ConfigError(
            "skill name must equal its directory name",
            file=skill_file,
            field="name",
            value=name,
            fix=f"rename the directory or set name: {skill_file.parent.name}",
        )
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip():
        raise ConfigError("description is required", file=skill_file, field="description")
    return Skill(
        name=name,
        description=description.strip(),
        location=skill_file,
        allowed_tools=_allowed_tools(meta.get("allowed-tools"), skill_file),
    )


def load_skills(
    skills_dir: Path, *, confine_to: Path | None = None
) -> tuple[list[Skill], list[ConfigError]]:
    """Load every valid skill under ``skills_dir``; return (skills, warnings).

    With ``confine_to``, a SKILL.md that resolves (through symlinks) outside that folder is
    skipped with a warning: skills are prompt text given to the model, and a symlink must not
    turn any readable file into one.
    """
    skills: list[Skill] = []
    problems: list[ConfigError] = []
    if not skills_dir.is_dir():
        return skills, problems
    for entry in sorted(skills_dir.iterdir()):
        skill_file = entry / "SKILL.md"
        if not skill_file.is_file():
            continue
        if confine_to is not None and not skill_file.resolve().is_relative_to(confine_to):
            problems.append(
                ConfigError(
                    f"skill file resolves outside {confine_to} (skipped)",
                    file=skill_file,
                    value=str(skill_file.resolve()),
                    fix="copy the skill into the agent's folder, or set "
                    "spec.allow_external_files: true",
                )
            )
            continue
        try:
            skills.append(_load_one(skill_file))
        except ConfigError as exc:
            problems.append(exc)
        except OSError as exc:
            problems.append(ConfigError(f"cannot read file: {exc.strerror}", file=skill_file))
    return skills, problems


def render_skills_block(skills: list[Skill]) -> str:
    """The ``<available_skills>`` block placed in the system prompt."""
    if not skills:
        return ""
    entries = [
        f"<skill><name>{s.name}</name><description>{s.description}</description>"
        f"<location>{s.location}</location></skill>"
        for s in skills
    ]
    return "\n".join(["<available_skills>", *entries, "</available_skills>"])
