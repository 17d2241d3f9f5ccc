"""The ``memory`` tool: what an agent knows across sessions, kept as Markdown files.

Three kinds of memory, all plain files a person can read and edit:

- **world** knowledge shared by every agent: ``<world_memory_dir>/<topic>.md``;
- the agent's long-term memory: ``<agent_dir>/memory/MEMORY.md``;
- the agent's daily experiences: ``<agent_dir>/memory/daily/YYYY-MM-DD.md`` (local date).

``recall`` reads them, ``remember`` appends to today's file, ``reflect`` reads or rewrites
MEMORY.md and ``update_world`` rewrites a topic. Rewrites are atomic (``store.atomic``), so a
crash leaves the old or the new text, never half of it; a failed append is cut back, so no
half entry stays. Every write goes through ``FileOps`` (tests inject disk faults). File I/O
runs on a thread so a slow disk does not stall other sessions.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from duragent.core.clock import local_now
from duragent.core.messages import ToolDefinition
from duragent.store.atomic import atomic_write
from duragent.store.fileops import OS_FILE_OPS, FileOps, write_all
from duragent.tools._args import builtin_invocation, int_arg, str_arg
from duragent.tools.base import PolicyType, ToolContext, ToolOutcome

__all__ = ["MemoryTool", "sanitize_topic"]

NO_MEMORIES = "No memories found"
_SECTION_SEPARATOR = "\n\n---\n\n"
_MAX_TOPIC = 100  # file names stay far below the 255-byte limit
_TOPIC_UNSAFE = re.compile(r"[^a-z0-9_-]")
_append_lock = threading.Lock()  # one "is the file new?" check + append at a time


def sanitize_topic(topic: str) -> str:
    """A file stem for ``topic``: lower case; any character but a-z 0-9 ``-`` ``_`` becomes ``-``.

    This also keeps the file inside the world directory: ``../x`` becomes ``---x``.
    """
    return _TOPIC_UNSAFE.sub("-", topic.strip().lower())[:_MAX_TOPIC]


def _read(path: Path) -> str | None:
    """The file's text with surrounding whitespace removed; ``None`` when absent or blank."""
    try:
        # A person may have saved a note in another encoding: show it, do not fail recall.
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except FileNotFoundError:
        return None
    return text or None


class MemoryTool:
    """Gives the agent recall, daily notes, long-term memory and shared world knowledge.

    Args:
        clock: the local time now; tests pass a fixed one to control "today".
        ops: the file calls of rewrites (tests inject disk faults through it).
    """

    name: str = "memory"
    policy_type: PolicyType = "builtin"

    def __init__(
        self, clock: Callable[[], datetime] = local_now, ops: FileOps = OS_FILE_OPS
    ) -> None:
        self._clock = clock
        self._ops = ops

    def definition(self) -> ToolDefinition:
        """The four actions and their arguments."""
        return ToolDefinition(
            name=self.name,
            description=(
                "Your memory across conversations. action=recall returns world knowledge, your "
                "long-term memory and the last `days` days of experiences (default 3). "
                "action=remember appends `content` to today's experiences. action=reflect "
                "returns your long-term memory (MEMORY.md), or replaces it with `content` when "
                "given — write the whole new text. action=update_world replaces the shared "
                "world-knowledge note `topic` with `content`."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "action": {
                        "type": "string",
                        "enum": ["recall", "remember", "reflect", "update_world"],
                    },
                    "days": {"type": "integer", "minimum": 1, "maximum": 30},
                    "content": {"type": "string"},
                    "topic": {"type": "string"},
                },
                "required": ["action"],
            },
        )

    def invocation(self, args: Mapping[str, Any]) -> str:
        """``memory:<action>``."""
        return builtin_invocation(self.name, args)

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Dispatch on ``action``; a missing argument is an unsuccessful outcome."""
        action = (str_arg(args, "action") or "").strip().lower()
        memory_dir = ctx.agent_dir / "memory"
        content = str_arg(args, "content")
        try:
            if action == "recall":
                days = int_arg(args, "days", default=3, low=1, high=30)
                text = await asyncio.to_thread(self._recall, ctx.world_memory_dir, memory_dir, days)
                return ToolOutcome(True, text)
            if action == "remember":
                if content is None:
                    return ToolOutcome(False, "memory remember needs `content` to remember")
                return ToolOutcome(
                    True, await asyncio.to_thread(self._remember, memory_dir, content)
                )
            if action == "reflect":
                return await asyncio.to_thread(self._reflect, memory_dir / "MEMORY.md", content)
            if action == "update_world":
                return await self._update_world(args, ctx.world_memory_dir, content)
        except OSError as exc:
            return ToolOutcome(False, f"memory {action} failed: {exc}")
        return ToolOutcome(
            False,
            f"unknown memory action {action!r}; use recall, remember, reflect or update_world",
        )

    def _recall(self, world_dir: Path, memory_dir: Path, days: int) -> str:
        sections = []
        world = []
        if world_dir.is_dir():
            for path in sorted(world_dir.glob("*.md")):
                text = _read(path)
                if text is not None:
                    world.append(f"## {path.stem}\n\n{text}")
        if world:
            sections.append("# World Knowledge\n\n" + "\n\n".join(world))
        own = _read(memory_dir / "MEMORY.md")
        if own is not None:
            sections.append(f"# Your Memory\n\n{own}")
        today = self._clock().date()
        recent = []
        for back in range(days):
            day = today - timedelta(days=back)
            text = _read(memory_dir / "daily" / f"{day.isoformat()}.md")
            if text is not None:
                recent.append(text)
        if recent:
            sections.append("# Recent Experiences\n\n" + "\n\n".join(recent))
        return _SECTION_SEPARATOR.join(sections) if sections else NO_MEMORIES

    def _remember(self, memory_dir: Path, content: str) -> str:
        now = self._clock()
        path = memory_dir / "daily" / f"{now.date().isoformat()}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = f"\n## {now:%H:%M}\n\n{content.strip()}\n"
        with _append_lock:  # through ``FileOps``, like every write of the tool
            fd = self._ops.open_append(path)
            try:
                start = self._ops.size(fd)
                text = (f"# {now.date().isoformat()}\n" if start == 0 else "") + entry
                try:
                    write_all(self._ops, fd, text.encode())
                    self._ops.fsync(fd)
                except BaseException:  # no half entry for a person to find in the note
                    with contextlib.suppress(OSError):
                        self._ops.truncate(fd, start)
                    raise
            finally:
                self._ops.close(fd)
        return f"Remembered in {path.name}"

    def _replace_note(self, path: Path, content: str) -> None:
        """Rewrite a note atomically; it keeps its permissions, a new one is private (0600)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        data = (content.strip() + "\n").encode()
        atomic_write(path, data, self._ops, keep_mode=True, new_file_mode=0o600, hidden_temp=True)

    def _reflect(self, path: Path, content: str | None) -> ToolOutcome:
        if content is None:
            return ToolOutcome(True, _read(path) or "MEMORY.md is empty: nothing reflected yet")
        self._replace_note(path, content)
        return ToolOutcome(True, "MEMORY.md updated")

    async def _update_world(
        self, args: Mapping[str, Any], world_dir: Path, content: str | None
    ) -> ToolOutcome:
        topic = str_arg(args, "topic")
        if topic is None or content is None:
            return ToolOutcome(False, "memory update_world needs `topic` and `content`")
        stem = sanitize_topic(topic)
        if not stem.strip("-_"):
            return ToolOutcome(False, f"topic {topic!r} has no letters or digits to name a file")
        await asyncio.to_thread(self._replace_note, world_dir / f"{stem}.md", content)
        return ToolOutcome(True, f"World knowledge {stem!r} updated")
