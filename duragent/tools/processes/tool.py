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

Every action but ``spawn`` keeps to the jobs the caller reaches (``meta.reach_of``): those
started from the caller's own chat, or every job of the agent for the operator and an owner
with ``tool_scope: agent``. Another chat's job is "process not found", like a missing one,
and ``status`` shows no server path.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from duragent.agents.access_spec import QuotaSpec
from duragent.core.messages import ToolDefinition
from duragent.tools._args import builtin_invocation, int_arg
from duragent.tools.base import PolicyType, ToolContext, ToolOutcome
from duragent.tools.processes.jobs import read_tail
from duragent.tools.processes.meta import ProcessMeta, Reach, reach_of
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

    def __init__(
        self,
        registry: ProcessRegistry,
        chat_of: ChatOf | None = None,
        quotas: QuotaSpec | None = None,
    ) -> None:
        self._registry = registry
        self._chat_of = chat_of
        self._quotas = quotas or QuotaSpec()
        """The agent's ``spec.access.quotas``: ``background_processes_per_chat``."""

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
        reach = reach_of(ctx.agent_name, ctx.caller)
        if action == "list":
            return self._list(reach, ctx.caller.reaches_all)
        handle = args.get("handle")
        if not isinstance(handle, str) or not handle.strip():
            return ToolOutcome(False, "Invalid arguments: 'handle' is required for this action")
        handle = handle.strip()
        try:
            return await self._on_handle(action, handle, args, reach, ctx)
        except (ProcessError, TmuxError) as exc:
            return ToolOutcome(False, str(exc))

    async def _on_handle(
        self, action: str, handle: str, args: Mapping[str, Any], reach: Reach, ctx: ToolContext
    ) -> ToolOutcome:
        """One job's action; a job out of ``reach`` (``reach_of``) is "not found"."""
        registry = self._registry
        if action == "status":
            meta = registry.owned(handle, reach).meta
            return ToolOutcome(True, json.dumps(_status(meta, ctx), indent=2))
        if action == "log":
            offset = int_arg(args, "offset", default=0, low=0, high=2**31)
            limit = int_arg(args, "limit", default=DEFAULT_LOG_LIMIT, low=0, high=2**31)
            text = registry.read_log(handle, reach, offset, limit)
            return ToolOutcome(True, text or "(no output yet)")
        if action == "capture":
            name = registry.tmux_session(handle, reach, running=False)
            return ToolOutcome(True, await registry.tmux.capture(name))
        if action == "send_keys":
            keys = _arg(args, "keys")
            if not isinstance(keys, str):
                return ToolOutcome(
                    False, "Invalid arguments: 'keys' is required for send_keys action"
                )
            name = registry.tmux_session(handle, reach, running=True)
            await registry.tmux.send_keys(
                name, keys.split(), enter=_bool(args, "press_enter", default=True)
            )
            return ToolOutcome(True, f"Sent keys to {handle}")
        if action == "write":
            text = _arg(args, "input")
            if not isinstance(text, str):
                return ToolOutcome(False, "Invalid arguments: 'input' is required for write action")
            await registry.write(handle, reach, text)
            return ToolOutcome(True, f"Wrote to {handle}")
        if action == "kill":
            await registry.kill(handle, reach)
            return ToolOutcome(True, f"Killed process {handle}")
        if action == "watch":
            seconds = int_arg(
                {"v": _arg(args, "interval_seconds")},
                "v",
                default=DEFAULT_SILENCE_SECONDS,
                low=1,
                high=86400,
            )
            registry.watch(handle, reach, float(seconds))
            return ToolOutcome(
                True, f"Screen watcher started for {handle} (silence timeout: {seconds}s)"
            )
        registry.unwatch(handle, reach)
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
            shown = workdir.strip() if isinstance(workdir, str) else "."  # no server path
            return ToolOutcome(False, f"Failed to spawn process: no such directory: {shown}")
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
        if chat is not None:  # no await from here to the job's entry: two spawns see each other
            refusal = self._over_quota(ctx.agent_name, chat)
            if refusal is not None:
                return ToolOutcome(False, refusal)
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

    def _over_quota(self, agent: str, chat: tuple[str, str]) -> str | None:
        """The refusal when ``chat`` runs ``background_processes_per_chat`` jobs already.

        Jobs started from a chat remember it (their meta's ``gateway`` and ``chat_id``); a
        session with no chat (the operator's, over HTTP or the CLI) is not limited.
        """
        limit = self._quotas.background_processes_per_chat
        running = self._registry.running_in_chat(agent, *chat)
        if running < limit:
            return None
        field = "spec.access.quotas.background_processes_per_chat"
        return (
            f"Failed to spawn process: quota reached: this chat runs {running} background "
            f"processes, the most {field} allows ({limit}). Wait for one to finish or kill "
            f"one (action=kill), or the agent's owner can raise {field} in its agent.yaml."
        )

    def _list(self, reach: Reach, everywhere: bool) -> ToolOutcome:
        metas = self._registry.listing(reach)
        if not metas:
            where = "" if everywhere else " for this chat"
            return ToolOutcome(True, f"No background processes{where}.")
        lines = []
        for m in metas:
            tmux = f" [interactive: {m.tmux_session}]" if m.tmux_session else ""
            lines.append(f"- {m.handle} | {m.command} | {m.status} | {m.label or '-'}{tmux}\n")
        return ToolOutcome(True, "".join(lines))


def _status(meta: ProcessMeta, ctx: ToolContext) -> dict[str, Any]:
    """``status``'s JSON: the meta file's, without server paths.

    No ``log_path``; a ``workdir`` inside the agent's directory is shown relative to it, as
    ``spawn`` takes it.
    """
    doc = meta.document()
    del doc["log_path"]
    if meta.workdir is not None:
        with contextlib.suppress(ValueError):
            doc["workdir"] = str(Path(meta.workdir).relative_to(ctx.agent_dir))
    return doc


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
