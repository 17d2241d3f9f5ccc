"""``tool_output``: read a tool output that was cut to fit the context window.

When Layer 3a cuts a result, the loop saves the whole output for the session
(``store.saved_outputs``) and the cut result's notice says
``…; full output saved as out_01J…, read it with tool_output]``. This tool reads that output
back in pieces the window can hold: the first or last lines, a line range, or the lines that
contain a string (with their numbers, so a range can follow).

Only the session's own outputs are reachable: the runtime gives the tool the session's store
(``ToolContext.outputs``), which validates ids before touching a file. The search is a plain
substring (optionally case-insensitive), never a regular expression: a pattern a model was
talked into by hostile tool output cannot make a worker thread backtrack for hours.
Every answer is bounded (``MAX_LINES`` lines, ``MAX_CHARS`` characters, long lines cut) and
says how to get the next piece.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from duragent.core.messages import ToolDefinition
from duragent.tools.base import PolicyType, ToolContext, ToolOutcome

__all__ = ["MAX_CHARS", "MAX_LINES", "TOOL_OUTPUT", "ToolOutputTool"]

TOOL_OUTPUT = "tool_output"
MAX_LINES = 400
MAX_CHARS = 24_000
MAX_LINE_CHARS = 2_000
DEFAULT_LINES = 100
MODES = ("head", "tail", "range", "grep")


def _int(args: Mapping[str, Any], key: str, default: int) -> int:
    value = args.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{key} must be a whole number")
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{key} must be a whole number, got {value!r}") from None


class ToolOutputTool:
    """The ``tool_output`` builtin (module docstring)."""

    name = TOOL_OUTPUT
    policy_type: PolicyType = "builtin"

    def definition(self) -> ToolDefinition:
        """Short on purpose: it is offered in every turn once a session saved an output."""
        return ToolDefinition(
            name=self.name,
            description=(
                "Read a cut tool output saved as out_…: mode head/tail (lines), range "
                "(start-end, 1-based) or grep (lines containing pattern)."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "mode": {"type": "string", "enum": list(MODES)},
                    "lines": {"type": "integer"},
                    "start": {"type": "integer"},
                    "end": {"type": "integer"},
                    "pattern": {"type": "string"},
                    "ignore_case": {"type": "boolean"},
                },
                "required": ["id"],
            },
        )

    def invocation(self, args: Mapping[str, Any]) -> str:
        """``tool_output:<mode>`` for policy patterns."""
        mode = args.get("mode") or "head"
        return f"{self.name}:{mode if mode in MODES else 'head'}"

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Read the session's saved output as asked; every problem is a correctable error."""
        if ctx.outputs is None:
            return ToolOutcome(False, "Saved outputs are turned off for this agent.")
        output_id = args.get("id")
        if not isinstance(output_id, str) or not output_id:
            return ToolOutcome(False, "Give the saved output's id, e.g. id='out_01J…'.")
        mode = args.get("mode") or "head"
        if mode not in MODES:
            return ToolOutcome(False, f"mode must be one of {', '.join(MODES)}, got {mode!r}.")
        try:
            text = await asyncio.to_thread(ctx.outputs.read, output_id)
        except LookupError as exc:
            return ToolOutcome(False, str(exc))
        try:
            answer = await asyncio.to_thread(_answer, text, output_id, args)
        except ValueError as exc:
            return ToolOutcome(False, f"Invalid arguments for tool_output: {exc}.")
        return ToolOutcome(True, answer, save_if_cut=False)  # the source is saved already


def _answer(text: str, output_id: str, args: Mapping[str, Any]) -> str:
    lines = text.splitlines()
    total = len(lines)
    mode = args.get("mode") or "head"
    if mode == "grep":
        return _grep(lines, output_id, args)
    if mode == "range":
        start = max(1, _int(args, "start", 1))
        end = min(total, _int(args, "end", start + DEFAULT_LINES - 1))
    else:
        count = max(1, min(MAX_LINES, _int(args, "lines", DEFAULT_LINES)))
        start, end = (
            (1, min(total, count)) if mode == "head" else (max(1, total - count + 1), total)
        )
    if total == 0:
        return f"{output_id} is empty."
    if start > total:
        return f"{output_id} has {total} lines; start={start} is past its end."
    if end < start:
        return f"end ({end}) is before start ({start})."
    return _numbered(lines, start, end, total, output_id, mode)


def _cut_line(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return line[:MAX_LINE_CHARS] + f" …[{len(line) - MAX_LINE_CHARS} more characters]"


def _numbered(lines: list[str], start: int, end: int, total: int, output_id: str, mode: str) -> str:
    end = min(end, start + MAX_LINES - 1)
    body: list[str] = []
    used = 0
    shown_to = start - 1
    for number in range(start, end + 1):
        line = _cut_line(lines[number - 1])
        if used + len(line) > MAX_CHARS and body:
            break
        body.append(line)
        used += len(line) + 1
        shown_to = number
    header = f"{output_id}: lines {start}–{shown_to} of {total}"
    more = ""
    if shown_to < total and mode != "tail":
        more = f"\n[more: mode=range start={shown_to + 1}]"
    elif mode == "tail" and start > 1:
        more = f"\n[earlier: mode=range end={start - 1}]"
    return header + "\n" + "\n".join(body) + more


def _grep(lines: list[str], output_id: str, args: Mapping[str, Any]) -> str:
    pattern = args.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise ValueError("grep needs a non-empty pattern")
    fold = bool(args.get("ignore_case"))
    needle = pattern.casefold() if fold else pattern
    hits: list[str] = []
    used = found = 0
    for number, line in enumerate(lines, start=1):
        if needle in (line.casefold() if fold else line):
            found += 1
            if len(hits) < MAX_LINES and used < MAX_CHARS:
                entry = f"{number}: {_cut_line(line)}"
                hits.append(entry)
                used += len(entry) + 1
    if not found:
        return f"{output_id}: no line contains {pattern!r} ({len(lines)} lines searched)."
    shown = f"{len(hits)} of {found}" if len(hits) < found else f"{found}"
    return f"{output_id}: {shown} lines contain {pattern!r}\n" + "\n".join(hits)
