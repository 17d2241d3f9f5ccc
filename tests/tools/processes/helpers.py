"""A registry over a temporary workspace, and a port that records what reached the session."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from duragent.core.caller import OPERATOR, Caller
from duragent.tools.base import ToolContext, ToolOutcome
from duragent.tools.processes import BackgroundProcessTool, ProcessMeta, ProcessRegistry, Tmux

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@dataclass
class Told:
    """The ``ProcessEvents`` port as a list: what each session was told, in order."""

    ended: list[tuple[ProcessMeta, str]] = field(default_factory=list)
    halted: list[tuple[ProcessMeta, str]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def process_ended(self, meta: ProcessMeta, message: str) -> None:
        self.ended.append((meta, message))
        self.changed.set()

    async def screen_halted(self, meta: ProcessMeta, message: str) -> None:
        self.halted.append((meta, message))
        self.changed.set()

    async def wait_ended(self, count: int = 1, within: float = 60.0) -> str:
        """The ``count``-th completion message, once it arrived."""
        async with asyncio.timeout(within):
            while len(self.ended) < count:
                self.changed.clear()
                await self.changed.wait()
        return self.ended[count - 1][1]


@contextmanager
def tmux_server() -> Iterator[Tmux]:
    """A private tmux server (its own socket), killed at the end."""
    tmux = Tmux(socket=f"duragent-test-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        yield tmux
    finally:
        subprocess.run([*tmux._argv("kill-server")], capture_output=True, check=False)


@dataclass
class Rig:
    root: Path
    registry: ProcessRegistry
    tool: BackgroundProcessTool
    told: Told
    chats: dict[str, tuple[str, str]] = field(default_factory=dict)
    """The chat (gateway, chat id) each session is in; a session not named has none."""

    def ctx(self, session_id: str = "s1", caller: Caller = OPERATOR) -> ToolContext:
        return ToolContext(
            caller=caller,
            session_id=session_id,
            agent_name="bot",
            agent_dir=self.root,
            workspace_dir=self.root / ".duragent",
            world_memory_dir=self.root / "world",
        )

    async def call(
        self, session_id: str = "s1", caller: Caller = OPERATOR, **args: Any
    ) -> ToolOutcome:
        return await self.tool.run(args, self.ctx(session_id, caller))

    async def spawn(
        self, command: str, session_id: str = "s1", caller: Caller = OPERATOR, **args: Any
    ) -> str:
        outcome = await self.call(session_id, caller, action="spawn", command=command, **args)
        assert outcome.success, outcome.content
        handle: str = json.loads(outcome.content)["handle"]
        return handle

    @property
    def directory(self) -> Path:
        return self.registry.directory


@asynccontextmanager
async def rig(root: Path, tmux: Tmux | None = None, **settings: Any) -> AsyncIterator[Rig]:
    told = Told()
    registry = ProcessRegistry(
        root / ".duragent" / "processes",
        events=told,
        tmux=tmux or Tmux(socket="duragent-test-unused"),
        poll_seconds=settings.pop("poll_seconds", 0.05),
        **settings,
    )
    chats: dict[str, tuple[str, str]] = {}

    async def chat_of(session_id: str) -> tuple[str, str] | None:
        return chats.get(session_id)

    await registry.start()
    try:
        yield Rig(root, registry, BackgroundProcessTool(registry, chat_of), told, chats)
    finally:
        await registry.stop()
