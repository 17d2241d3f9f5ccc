"""Directives: short standing rules in ``*.md`` files, workspace-wide and per agent.

Files are read in name order; empty files are skipped; the file stem is the directive's
source, and an agent file with the same stem as a workspace file replaces it. A file that
cannot be read (not UTF-8, no permission) is skipped with a logged warning, as in the
reference, so one bad file never stops an agent from loading.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

__all__ = ["Directive", "load_directives", "render_directives_block"]


@dataclass(frozen=True, slots=True)
class Directive:
    """One directive and where it came from."""

    source: str
    text: str
    path: Path


def _read_dir(directory: Path) -> list[Directive]:
    if not directory.is_dir():
        return []
    found = []
    for path in sorted(directory.glob("*.md")):
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("directive %s skipped: cannot read it (%s)", path, exc)
            continue
        if text:
            found.append(Directive(source=path.stem, text=text, path=path))
    return found


def load_directives(workspace_dir: Path, agent_dir: Path) -> list[Directive]:
    """Workspace directives then agent directives; agent files override same-named ones."""
    agent = _read_dir(agent_dir)
    overridden = {d.source for d in agent}
    return [d for d in _read_dir(workspace_dir) if d.source not in overridden] + agent


def render_directives_block(directives: list[Directive]) -> str:
    """The ``## Directives`` block placed in the system prompt."""
    if not directives:
        return ""
    return "## Directives\n" + "\n".join(f"- {d.text}" for d in directives)
