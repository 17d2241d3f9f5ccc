"""The ``background_process`` tool: the model's side of the registry.

Actions and argument names are the reference's code (``spawn``, ``list``, ``status``, ``log``,
``capture``, ``send_keys``, ``write``, ``kill``, ``watch``, ``unwatch``; ``command``,
``workdir``, ``wait``, ``interactive``, ``label``, ``timeout_seconds`` (1800), ``handle``,
``offset``, ``limit`` (100), ``keys``, ``press_enter`` (true), ``input``, ``interval_seconds``
(5)). The reference's book names four of them differently (``cwd``, ``enter``, ``text``,
``silence_timeout``); those are accepted too, so an agent written from either works. Result
texts are the reference's.

A job runs in the agent's directory unless ``workdir`` says otherwise (relative paths are
taken from the agent's directory, as ``bash`` runs there). Policy: the call is checked as
``builtin:background_process:<action>`` and, for ``spawn``, its command is checked as a
``bash`` command too (``commands``), so a pattern denying ``bash:rm *`` cannot be dodged by
spawning ``rm``.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from duragent.core.messages import ToolDefinition
from duragent.tools._args import builtin_invocation, int_arg
from duragent.tools.base import PolicyType, ToolContext, ToolOutcome
from duragent.tools.processes.jobs import read_tail
from duragent.tools.processes.meta import ProcessMeta
from duragent.tools.processes.registry import ProcessError, ProcessRegistry, SpawnRequest
from duragent.tools.processes.tmux import TmuxError

__all__ = ["ACTIONS", "BackgroundProcessTool"]

ACTIONS = (
    "spawn", "list", "status", "log", "capture", "send_keys", "write", "kill", "watch", "unwatch",
)  # fmt: skip
INTERACTIVE_SANDBOXED = (
    "Failed to spawn process: interactive (tmux) processes cannot run under "
    "sandbox.mode bubblewrap (the tmux server runs outside the sandbox). "
    "Spawn it without interactive: true."
)
"""Refused rather than run unconfined: the sandbox fails closed."""
DEFAULT_TIMEOUT_SECONDS = 1800
DEFAULT_LOG_LIMIT = 100
DEFAULT_SILENCE_SECONDS = 5
WAIT_TAIL_BYTES = 8 * 1024
ALIASES = {"workdir": "cwd", "press_enter": "enter", "input": "text", "interval_seconds":
           "silence_timeout"}  # fmt: skip
"""The reference's code names and the names its book uses for the same arguments."""

ChatOf = Callable[[str], Awaitable[tuple[str, str] | None]]
"""``chat_of(session_id)``: the session's (gateway, chat id), recorded in the job's meta."""

_DESCRIPTION = (
    "Manage background processes. Actions: 'spawn' (start a command), 'list' (all processes), "
    "'status' (check one), 'log' (read output), 'capture' (interactive screen), 'send_keys' "
    "(send tmux key names), 'write' (type literal text), 'kill' (terminate), 'watch' (start "
    "screen watcher for tmux process — fires callback when screen stops changing), 'unwatch' "
    "(stop screen watcher). After spawning, you will receive a completion notification when "
    "the process finishes — do not poll in a loop. Kill an existing process before spawning "
    "a replacement."
)


def _arg(args: Mapping[str, Any], name: str) -> Any:
    value = args.get(name)
    if value is None and name in ALIASES:
        value = args.get(ALIASES[name])
    return value


def _bool(args: Mapping[str, Any], name: str, default: bool) -> bool:
    value = _arg(args, name)
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return default if value is None else bool(value)


class BackgroundProcessTool:
    """``background_process`` for one agent's sessions (see module docstring)."""

    name: str = "background_process"
    policy_type: PolicyType = "builtin"

    def __init__(self, registry: ProcessRegistry, chat_of: ChatOf | None = None) -> None:
        self._registry = registry
        self._chat_of = chat_of

    def definition(self) -> ToolDefinition:
        """The reference's schema."""

        def prop(kind: str, text: str) -> dict[str, str]:
            return {"type": kind, "description": text}

        return ToolDefinition(
            name=self.name,
            description=_DESCRIPTION,
            parameters={
                "type": "object",
                "properties": {
                    "action": {
                        "type": "string",
                        "enum": list(ACTIONS),
                        "description": "Action to perform",
                    },
                    "command": prop("string", "(spawn) Shell command to execute (bash -c)"),
                    "workdir": prop("string", "(spawn) Working directory for the command"),
                    "wait": prop(
                        "boolean",
                        "(spawn) If true, block until the process completes and return its "
                        "output. Default: false",
                    ),
                    "interactive": prop(
                        "boolean",
                        "(spawn) If true, run in interactive mode (terminal multiplexer). "
                        "Default: false",
                    ),
                    "label": prop("string", "(spawn) Human-readable label for this process"),
                    "timeout_seconds": prop(
                        "integer",
                        "(spawn) Maximum runtime in seconds before the process is killed. "
                        "Default: 1800",
                    ),
                    "handle": prop(
                        "string", "(status/log/capture/send_keys/write/kill) Process handle"
                    ),
                    "offset": prop("integer", "(log) Line offset (default: 0)"),
                    "limit": prop("integer", "(log) Max lines (default: 100)"),
                    "keys": prop(
                        "string",
                        "(send_keys) Space-separated tmux key names (e.g., 'Down Enter', 'C-c')",
                    ),
                    "press_enter": prop(
                        "boolean",
                        "(send_keys) If true, press Enter after sending keys. Default: true",
                    ),
                    "input": prop(
                        "string",
                        "(write) Literal text to write to the process (tmux or stdin). "
                        "Append '\\n' to press Enter.",
                    ),
                    "interval_seconds": prop(
                        "integer",
                        "(watch) Silence timeout in seconds — fires callback after this long "
                        "with no new output. Default: 5",
                    ),
                },
                "required": ["action"],
            },
        )

    def invocation(self, args: Mapping[str, Any]) -> str:
        """``background_process:<action>``."""
        return builtin_invocation(self.name, args)

    def commands(self, args: Mapping[str, Any]) -> Sequence[str]:
        """The shell command a ``spawn`` runs: policy checks it as a ``bash`` command too."""
        command = args.get("command")
        if builtin_invocation(self.name, args) == f"{self.name}:spawn":
            return [command if isinstance(command, str) else ""]
        return []

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Do the action; refusals are unsuccessful outcomes with the reference's texts."""
        raw = args.get("action")
        action = raw.strip().lower() if isinstance(raw, str) else ""
        if action not in ACTIONS:
            return ToolOutcome(
                False,
                f"Unknown action: '{raw}'. Use: spawn, list, status, log, capture, send_keys, "
                "write, kill, watch, unwatch",
            )
        if action == "spawn":
            return await self._spawn(args, ctx)
        if action == "list":
            return self._list(ctx.session_id)
        handle = args.get("handle")
        if not isinstance(handle, str) or not handle.strip():
            return ToolOutcome(False, "Invalid arguments: 'handle' is required for this action")
        handle = handle.strip()
        try:
            return await self._on_handle(action, handle, args, ctx.session_id)
        except (ProcessError, TmuxError) as exc:
            return ToolOutcome(False, str(exc))

    async def _on_handle(
        self, action: str, handle: str, args: Mapping[str, Any], session: str
    ) -> ToolOutcome:
        registry = self._registry
        if action == "status":
            meta = registry.owned(handle, session).meta
            return ToolOutcome(True, json.dumps(meta.document(), indent=2))
        if action == "log":
            offset = int_arg(args, "offset", default=0, low=0, high=2**31)
            limit = int_arg(args, "limit", default=DEFAULT_LOG_LIMIT, low=0, high=2**31)
            text = registry.read_log(handle, session, offset, limit)
            return ToolOutcome(True, text or "(no output yet)")
        if action == "capture":
            name = registry.tmux_session(handle, session, running=False)
            return ToolOutcome(True, await registry.tmux.capture(name))
        if action == "send_keys":
            keys = _arg(args, "keys")
            if not isinstance(keys, str):
                return ToolOutcome(
                    False, "Invalid arguments: 'keys' is required for send_keys action"
                )
            name = registry.tmux_session(handle, session, running=True)
            await registry.tmux.send_keys(
                name, keys.split(), enter=_bool(args, "press_enter", default=True)
            )
            return ToolOutcome(True, f"Sent keys to {handle}")
        if action == "write":
            text = _arg(args, "input")
            if not isinstance(text, str):
                return ToolOutcome(False, "Invalid arguments: 'input' is required for write action")
            await registry.write(handle, session, text)
            return ToolOutcome(True, f"Wrote to {handle}")
        if action == "kill":
            await registry.kill(handle, session)
            return ToolOutcome(True, f"Killed process {handle}")
        if action == "watch":
            seconds = int_arg(
                {"v": _arg(args, "interval_seconds")},
                "v",
                default=DEFAULT_SILENCE_SECONDS,
                low=1,
                high=86400,
            )
            registry.watch(handle, session, float(seconds))
            return ToolOutcome(
                True, f"Screen watcher started for {handle} (silence timeout: {seconds}s)"
            )
        registry.unwatch(handle, session)
        return ToolOutcome(True, f"Screen watcher stopped for {handle}")

    async def _spawn(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            return ToolOutcome(False, "Invalid arguments: 'command' is required for spawn action")
        workdir = _arg(args, "workdir")
        cwd = ctx.agent_dir
        if isinstance(workdir, str) and workdir.strip():
            cwd = ctx.agent_dir / os.path.expanduser(workdir.strip())  # noqa: ASYNC240 (no I/O)
        if not await asyncio.to_thread(os.path.isdir, cwd):
            return ToolOutcome(False, f"Failed to spawn process: no such directory: {cwd}")
        label = args.get("label")
        chat = await self._chat_of(ctx.session_id) if self._chat_of is not None else None
        request = SpawnRequest(
            command=command,
            cwd=cwd,
            session_id=ctx.session_id,
            agent=ctx.agent_name,
            env=ctx.env,
            label=label if isinstance(label, str) and label.strip() else None,
            interactive=_bool(args, "interactive", default=False),
            timeout_seconds=int_arg(
                args, "timeout_seconds", default=DEFAULT_TIMEOUT_SECONDS, low=1, high=2**31
            ),
            gateway=chat[0] if chat else None,
            chat_id=chat[1] if chat else None,
            confine=ctx.sandbox.confine(ctx.agent_dir, ctx.session_id),
        )
        if request.interactive and ctx.sandbox.confines:
            return ToolOutcome(False, INTERACTIVE_SANDBOXED)
        try:
            meta = await self._registry.spawn(request)
        except ProcessError as exc:
            return ToolOutcome(False, f"Failed to spawn process: {exc}")
        if _bool(args, "wait", default=False):
            return _waited(await self._registry.wait(meta.handle))
        doc: dict[str, Any] = {"handle": meta.handle}
        if meta.tmux_session:
            doc["tmux_session"] = meta.tmux_session
        doc["status"] = "running"
        if meta.pid is not None:
            doc["pid"] = meta.pid
        if request.interactive and meta.tmux_session is None:
            doc["note"] = "tmux is not installed: running as a plain process (no screen)"
        return ToolOutcome(True, json.dumps(doc, indent=2))

    def _list(self, session_id: str) -> ToolOutcome:
        metas = self._registry.listing(session_id)
        if not metas:
            return ToolOutcome(True, "No background processes for this session.")
        lines = []
        for m in metas:
            tmux = f" [interactive: {m.tmux_session}]" if m.tmux_session else ""
            lines.append(f"- {m.handle} | {m.command} | {m.status} | {m.label or '-'}{tmux}\n")
        return ToolOutcome(True, "".join(lines))


def _waited(meta: ProcessMeta) -> ToolOutcome:
    """A ``wait: true`` spawn's result: the reference's ``WaitResult`` JSON."""
    try:
        tail, cut = read_tail(meta.log_path, WAIT_TAIL_BYTES)
        output = f"...\n{tail}" if cut else tail
    except OSError:
        output = ""
    ended = meta.completed_at or meta.spawned_at
    code = meta.status.exit_code if meta.status.exit_code is not None else -1
    doc = {
        "status": meta.status.state,
        "exit_code": code,
        "output": output,
        "duration_seconds": max(0, int((ended - meta.spawned_at).total_seconds())),
    }
    return ToolOutcome(code == 0, json.dumps(doc, indent=2))
