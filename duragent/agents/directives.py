"""Directives: short standing rules in ``*.md`` files, workspace-wide and per agent.

Files are read in name order; empty files are skipped; the file stem is the directive's
source, and an agent file with the same stem as a workspace file replaces it. A file that
cannot be read (not UTF-8, no permission) is skipped with a logged warning, as in the
reference, so one bad file never stops an agent from loading.

**Runtime defaults.** An agent with ``spec.memory`` is told what its memory is for and when to
use each action (``MEMORY_DIRECTIVE``, source ``memory``), as the reference does: the tool's
description says how to call it, not when remembering is worth a call. A ``memory.md``
directive file (workspace or agent) replaces it. It is part of the system prompt, so the
context budget counts it like every other directive.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

__all__ = [
    "MEMORY_DIRECTIVE",
    "Directive",
    "load_directives",
    "render_directives_block",
    "with_runtime_defaults",
]

MEMORY_DIRECTIVE = (
    "Memory: your `memory` tool keeps what you learn beyond this conversation. At the start of "
    "work that may build on earlier conversations, `recall` (recent notes, your long-term "
    "notes and shared world knowledge). As soon as you learn a fact, decision or preference "
    "worth keeping, `remember` it in a short factual line. Use `reflect` to read or rewrite "
    "your long-term notes with what has proven lasting, and `update_world` for knowledge every "
    "agent should share. Never store secrets."
)
"""The default ``memory`` directive (own words; the reference injects one of its own)."""


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


def with_runtime_defaults(
    directives: list[Directive], *, memory: bool, agent_dir: Path
) -> list[Directive]:
    """``directives`` plus the runtime's defaults the files did not replace (module docstring)."""
    if not memory or any(d.source == "memory" for d in directives):
        return directives
    default = Directive("memory", MEMORY_DIRECTIVE, agent_dir / "directives" / "memory.md")
    return [*directives, default]


def render_directives_block(directives: list[Directive]) -> str:
    """The ``## Directives`` block placed in the system prompt."""
    if not directives:
        return ""
    return "## Directives\n" + "\n".join(f"- {d.text}" for d in directives)
