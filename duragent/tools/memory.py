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

**Scope** (issue 33). World knowledge is the agent's world: every chat reads it, and only an
owner (``Caller.is_owner``) rewrites it, since every chat and agent reads what it says. The
long-term memory and the daily experiences are what conversations left behind, so they are
per chat: a caller that does not reach the whole agent keeps and reads them under
``<workspace>/.duragent/memory/chats/<agent>/<gateway>/<chat id>/`` (``MEMORY.md``,
``daily/``), never another chat's nor the agent-wide ones. That folder is outside the agent's
folder on purpose: the sandbox gives every chat's commands the agent's folder, and one chat's
commands must not read another's notes. The operator (HTTP/CLI) and an owner with
``tool_scope: agent`` use the agent-wide files above, as before. Outputs name files, never
server paths.

**Links** (issue 33). The runtime reads and writes these files with the server's rights, and
a command can plant a symbolic link where a note should be (``memory/MEMORY.md`` →
``../../.env``). No component of a note's path below its root (the agent's folder, the chats'
memory folder, the world folder) may be a link, for reads as for writes; a write is also
refused when it would land in the agent's definition (``agents.protected.write_refusal``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

from duragent.agents.protected import write_refusal
from duragent.core.caller import Caller
from duragent.core.clock import local_now
from duragent.core.messages import ToolDefinition
from duragent.store.atomic import atomic_write
from duragent.store.fileops import OS_FILE_OPS, FileOps, write_all
from duragent.tools._args import builtin_invocation, int_arg, str_arg
from duragent.tools.base import PolicyType, ToolContext, ToolOutcome

__all__ = ["MemoryTool", "memory_dir", "sanitize_topic"]

NO_MEMORIES = "No memories found"
WORLD_OWNERS_ONLY = (
    "memory update_world refused: world knowledge is read by every chat, so only an owner of "
    "this agent may change it (spec.access.owners in its agent.yaml)"
)
_SECTION_SEPARATOR = "\n\n---\n\n"
_MAX_TOPIC = 100  # file names stay far below the 255-byte limit
_TOPIC_UNSAFE = re.compile(r"[^a-z0-9_-]")
_append_lock = threading.Lock()  # one "is the file new?" check + append at a time


def sanitize_topic(topic: str) -> str:
    """A file stem for ``topic``: lower case; any character but a-z 0-9 ``-`` ``_`` becomes ``-``.

    This also keeps the file inside the world directory: ``../x`` becomes ``---x``.
    """
    return _TOPIC_UNSAFE.sub("-", topic.strip().lower())[:_MAX_TOPIC]


class _Refused(Exception):
    """A read or write the runtime must not make for a tool (links, the agent's definition)."""


def _segment(text: str) -> str:
    """One path segment naming ``text``, distinct for distinct texts and never ``.``/``..``.

    Percent-encoded (``/`` and ``.`` too); a long one is a hash behind ``%h``, which no
    encoding produces (``%`` always starts an escape of two hex digits).
    """
    quoted = quote(text, safe="-_").replace(".", "%2E")
    if not quoted or len(quoted) > _MAX_TOPIC:
        return "%h" + hashlib.sha256(text.encode()).hexdigest()
    return quoted


def memory_dir(agent_dir: Path, caller: Caller, chats_root: Path | None = None) -> Path:
    """Where ``caller``'s long-term memory and daily notes are kept (module docstring).

    ``chats_root``: the workspace's ``.duragent/memory/chats`` (default: beside the world
    folder's parent, as ``ToolContext`` lays them out).
    """
    if caller.reaches_all or caller.chat is None:
        return agent_dir / "memory"
    root = chats_root if chats_root is not None else agent_dir / "memory" / "chats"
    chat = caller.chat
    return root / _segment(agent_dir.name) / _segment(chat.gateway) / _segment(chat.chat_id)


def chats_memory_root(world_memory_dir: Path) -> Path:
    """``<workspace>/.duragent/memory/chats``: the chats' notes, out of the sandbox's sight."""
    return world_memory_dir.parent / "chats"


def _no_links(path: Path, root: Path, what: str) -> None:
    """Refuse ``path`` when a component below ``root`` (or ``root`` itself) is a link.

    A command can replace a note, or a folder on its way, by a link to a secret or to the
    agent's definition; the runtime reads and writes with the server's rights.
    """
    try:
        below = path.relative_to(root)
    except ValueError:
        raise _Refused(f"{what} refused: the note is not inside its memory folder") from None
    at = root  # itself the operator's (an agents folder may well be a link)
    for part in below.parts:
        at = at / part
        if at.is_symlink():
            raise _Refused(
                f"{what} refused: a symbolic link is in the way of the note; remove the link "
                "(memory files are read and written only inside their own folder)"
            )


def _shown(text: str, world_dir: Path, agent_dir: Path) -> str:
    """``text`` with the server's paths of the world and agent folders taken out of it."""
    for root, shown in ((world_dir, "world/"), (agent_dir, "")):
        for form in {str(root), os.path.realpath(root)}:
            text = text.replace(form + os.sep, shown)
    return text


def _read(path: Path) -> str | None:
    """The file's text with surrounding whitespace removed; ``None`` when absent or blank."""
    try:
        # A person may have saved a note in another encoding: show it, do not fail recall.
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except FileNotFoundError:
        return None
    return text or None


def _guard(path: Path, folder: Path, agent_dir: Path, what: str) -> None:
    """Refuse a note that a symlink leads to the agent's definition or out of its folder.

    A command (bash, a sandboxed one included) can replace ``memory/daily/<today>.md`` by a
    link to ``agent.yaml``; the runtime writes with the owner's rights, so it checks first.
    """
    refusal = write_refusal(path, folder=folder, agent_dir=agent_dir, what=what)
    if refusal is not None:
        raise _Refused(refusal)


@dataclass(frozen=True, slots=True)
class _Notes:
    """A caller's own notes: their folder, and what guards a read or a write of them."""

    folder: Path
    agent_dir: Path
    chats_root: Path

    @property
    def root(self) -> Path:
        """Below here no path component may be a link (the agent's folder or the chats')."""
        return self.chats_root if self.folder.is_relative_to(self.chats_root) else self.agent_dir

    def checked(self, path: Path, what: str) -> Path:
        """``path``, once no link is on its way (``_Refused`` otherwise)."""
        _no_links(path, self.root, what)
        return path

    def writable(self, path: Path, action: str) -> Path:
        """``path`` for a write: no link on its way, not into the agent's definition."""
        what = f"memory {action}"
        _no_links(path, self.root, what)
        _guard(path, self.folder, self.agent_dir, what)
        return path


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
        chats_root = chats_memory_root(ctx.world_memory_dir)
        own = _Notes(memory_dir(ctx.agent_dir, ctx.caller, chats_root), ctx.agent_dir, chats_root)
        content = str_arg(args, "content")
        try:
            if action == "recall":
                days = int_arg(args, "days", default=3, low=1, high=30)
                text = await asyncio.to_thread(self._recall, ctx.world_memory_dir, own, days)
                return ToolOutcome(True, text)
            if action == "remember":
                if content is None:
                    return ToolOutcome(False, "memory remember needs `content` to remember")
                return ToolOutcome(True, await asyncio.to_thread(self._remember, own, content))
            if action == "reflect":
                return await asyncio.to_thread(self._reflect, own, content)
            if action == "update_world":
                if not ctx.caller.is_owner:
                    return ToolOutcome(False, WORLD_OWNERS_ONLY)
                return await self._update_world(args, ctx.world_memory_dir, ctx.agent_dir, content)
        except _Refused as refused:
            return ToolOutcome(False, str(refused))
        except OSError as exc:  # its text names the file: by its place, not the server path
            reason = _shown(str(exc), ctx.world_memory_dir, ctx.agent_dir)
            return ToolOutcome(False, f"memory {action} failed: {reason}")
        return ToolOutcome(
            False,
            f"unknown memory action {action!r}; use recall, remember, reflect or update_world",
        )

    def _recall(self, world_dir: Path, notes: _Notes, days: int) -> str:
        sections = []
        world = []
        if world_dir.is_dir():
            for path in sorted(world_dir.glob("*.md")):
                _no_links(path, world_dir, "memory recall")
                text = _read(path)
                if text is not None:
                    world.append(f"## {path.stem}\n\n{text}")
        if world:
            sections.append("# World Knowledge\n\n" + "\n\n".join(world))
        own = _read(notes.checked(notes.folder / "MEMORY.md", "memory recall"))
        if own is not None:
            sections.append(f"# Your Memory\n\n{own}")
        today = self._clock().date()
        recent = []
        for back in range(days):
            day = today - timedelta(days=back)
            note = notes.folder / "daily" / f"{day.isoformat()}.md"
            text = _read(notes.checked(note, "memory recall"))
            if text is not None:
                recent.append(text)
        if recent:
            sections.append("# Recent Experiences\n\n" + "\n\n".join(recent))
        return _SECTION_SEPARATOR.join(sections) if sections else NO_MEMORIES

    def _remember(self, notes: _Notes, content: str) -> str:
        now = self._clock()
        path = notes.writable(notes.folder / "daily" / f"{now.date().isoformat()}.md", "remember")
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

    def _reflect(self, notes: _Notes, content: str | None) -> ToolOutcome:
        if content is None:
            text = _read(notes.checked(notes.folder / "MEMORY.md", "memory reflect"))
            return ToolOutcome(True, text or "MEMORY.md is empty: nothing reflected yet")
        path = notes.writable(notes.folder / "MEMORY.md", "reflect")
        self._replace_note(path, content)
        return ToolOutcome(True, "MEMORY.md updated")

    async def _update_world(
        self, args: Mapping[str, Any], world_dir: Path, agent_dir: Path, content: str | None
    ) -> ToolOutcome:
        topic = str_arg(args, "topic")
        if topic is None or content is None:
            return ToolOutcome(False, "memory update_world needs `topic` and `content`")
        stem = sanitize_topic(topic)
        if not stem.strip("-_"):
            return ToolOutcome(False, f"topic {topic!r} has no letters or digits to name a file")
        path = world_dir / f"{stem}.md"
        _no_links(path, world_dir, "memory update_world")
        _guard(path, world_dir, agent_dir, "memory update_world")
        await asyncio.to_thread(self._replace_note, path, content)
        return ToolOutcome(True, f"World knowledge {stem!r} updated")
