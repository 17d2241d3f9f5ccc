"""What a tool is: a name, a definition for the model, a policy invocation string, and ``run``.

Tools never import the session or front-end layers. What a tool needs from the rest of the
system reaches it through ``ToolContext``: plain paths plus small Protocol ports that the
runtime implements (e.g. reading sibling sessions, creating schedules).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from duragent.core.caller import Caller
from duragent.core.messages import ToolDefinition
from duragent.tools.sandbox import TRUST, Sandbox

__all__ = [
    "PolicyType",
    "RunsCommands",
    "SavedOutputs",
    "SessionReader",
    "SessionSummary",
    "Tool",
    "ToolContext",
    "ToolOutcome",
]

PolicyType = Literal["bash", "builtin", "cli"]


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a tool returned: whether it succeeded and the text the model will read."""

    success: bool
    content: str
    save_if_cut: bool = True
    """Whether the loop keeps the whole output on disk when Layer 3a cuts it (``tool_output``
    says no: its answer is a piece of an output that is already saved)."""
    reload_tools: bool = False
    """The loop rebuilds its tools before its next model call (``reload_tools``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionSummary:
    """A sibling session as the ``session`` tool lists it."""

    session_id: str
    status: str
    updated_at: str


class SessionReader(Protocol):
    """Port: read other sessions of the same agent (implemented by the runtime).

    Both methods keep to ``caller``'s reach (``Caller.may_reach`` of the session's chat), and
    filter before they read: what the caller may not reach is never loaded for it.
    """

    async def list_sessions(
        self, agent: str, limit: int, *, caller: Caller
    ) -> list[SessionSummary]:
        """Non-completed sessions of ``agent`` that ``caller`` may reach, newest first."""
        ...

    async def read_messages(
        self, agent: str, session_id: str, limit: int, *, caller: Caller
    ) -> list[tuple[str, str]]:
        """The last ``limit`` (role, text) user/assistant messages of ``agent``'s session.

        Raises ``LookupError`` when the session does not exist, *belongs to another agent or
        to a chat ``caller`` may not reach* (indistinguishable to the caller: a chat must not
        learn other chats' session ids, let alone read them).
        """
        ...


class SavedOutputs(Protocol):
    """Port: the full outputs Layer 3a cut, of THIS session only (``store.saved_outputs``)."""

    def new_id(self) -> str:
        """An id for an output about to be saved."""
        ...

    def save(self, output_id: str, text: str) -> None:
        """Keep ``text`` durably under ``output_id``."""
        ...

    def read(self, output_id: str) -> str:
        """The saved text; ``LookupError`` when this session has none by that id."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    """Where a tool runs and what it may reach."""

    session_id: str
    agent_name: str
    caller: Caller
    """Who the turn acts for and its chat (``core.caller``): tools that reach beyond one chat
    (sessions, schedules, memory, processes) keep to ``caller.may_reach``."""
    agent_dir: Path
    workspace_dir: Path
    world_memory_dir: Path
    sessions: SessionReader | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    sandbox: Sandbox = TRUST
    """Where processes the tool starts run (``tools.sandbox``; ``serve`` has probed it)."""
    outputs: SavedOutputs | None = None
    """The session's saved full outputs (None: saving is off for this agent)."""


class Tool(Protocol):
    """A callable capability offered to the model."""

    name: str
    policy_type: PolicyType

    def definition(self) -> ToolDefinition:
        """Name, description and JSON Schema of the arguments, as sent to the model."""
        ...

    def invocation(self, args: Mapping[str, Any]) -> str:
        """The string policy patterns are matched against.

        bash: the command; builtins: ``name:action`` or ``name``; CLI tools: the tool name.
        """
        ...

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Do the work. Expected failures are an unsuccessful outcome, not an exception."""
        ...


@runtime_checkable
class RunsCommands(Protocol):
    """A tool some of whose calls run shell commands (``background_process`` spawn).

    Policy checks each command as a ``bash`` command, besides the call's own invocation, so
    what ``bash:…`` patterns deny cannot be run through another tool.
    """

    def commands(self, args: Mapping[str, Any]) -> Sequence[str]:
        """The shell commands this call would run (empty for most calls)."""
        ...
