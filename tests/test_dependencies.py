"""The SDKs that change under us are bounded to the major versions the suite has run against
(issue 21 item 15; how to move a bound: specs/202611240225.dependency-bounds.md)."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
BOUNDED = ("openai", "anthropic", "httpx2", "aiohttp")


def requirements() -> dict[str, Requirement]:
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    parsed = [Requirement(text) for text in declared]
    return {r.name.lower(): r for r in parsed}


@pytest.mark.parametrize("name", BOUNDED)
def test_the_dependency_has_an_upper_bound_at_its_next_major(name: str) -> None:
    requirement = requirements()[name]
    uppers = [s for s in requirement.specifier if s.operator == "<"]
    assert len(uppers) == 1, f"{requirement}: needs one '<N' bound"
    assert uppers[0].version.split(".")[1:] in ([], ["0"]), f"{requirement}: bound at a major"


@pytest.mark.parametrize("name", BOUNDED)
def test_the_installed_version_is_inside_the_bounds(name: str) -> None:
    requirement = requirements()[name]
    assert requirement.specifier.contains(version(name)), (
        f"{name} {version(name)} is installed but pyproject says {requirement}; move the "
        "bound as the spec says, or install a version inside it"
    )


CHAT_SDKS = ("python-telegram-bot", "markdown-it-py", "discord.py")


@pytest.mark.parametrize("name", CHAT_SDKS)
def test_a_chat_platforms_sdk_comes_with_the_main_install(name: str) -> None:
    """README's Telegram steps left a silent bot when the SDK was an extra (issue 39)."""
    assert name in requirements()


def test_the_old_extras_still_install_for_scripts_that_name_them() -> None:
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    assert extras["telegram"] == []
    assert extras["discord"] == []


def test_nothing_a_user_reads_says_to_install_a_chat_extra() -> None:
    root = PYPROJECT.parent
    texts = [root / "README.md", *sorted((root / "duragent").rglob("*.py"))]
    extra = re.compile(r"duragent\[(telegram|discord|\{name\})\]")
    said = [str(p.relative_to(root)) for p in texts if extra.search(p.read_text("utf-8"))]
    assert said == []
