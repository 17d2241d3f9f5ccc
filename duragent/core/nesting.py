"""How deeply a YAML or JSON text nests, measured before any parser sees it.

libyaml's composer recurses in C: a 100 KB file of ``[[[[…`` (~40,000 levels) crashes the
whole process with SIGSEGV, which no ``try`` can catch, and Python's ``json`` raises
``RecursionError`` (not ``ValueError``) on deep input. Every file the runtime or a person
edits (duragent.yaml, agent.yaml, policy files, SKILL.md front matter, state.yaml,
events.jsonl lines) is therefore scanned first, in linear time, and refused when it nests
deeper than ``MAX_NESTING_DEPTH`` levels.

The YAML scan is conservative, not a parser: it counts block indentation levels, compact
``- - x`` sequences and unquoted ``[``/``{`` (skipping quoted strings, comments and block
scalar text). It may overcount a stray bracket in a plain scalar by one; real files nest a
handful of levels, far below the limit.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_NESTING_DEPTH", "TooDeep", "json_too_deep", "loads_bounded", "yaml_too_deep"]


def _limit_from_env() -> int:
    raw = os.environ.get("DURAGENT_MAX_NESTING_DEPTH", "")
    return int(raw) if raw.isdigit() and 8 <= int(raw) <= 10_000 else 100


MAX_NESTING_DEPTH = _limit_from_env()
"""Deepest nesting accepted in YAML and JSON files (100; ``DURAGENT_MAX_NESTING_DEPTH``,
8-10,000, overrides it). libyaml crashes at tens of thousands of levels."""


@dataclass(frozen=True, slots=True)
class TooDeep:
    """Where the nesting first went past the limit."""

    depth: int
    line: int

    def reason(self, limit: int) -> str:
        """A sentence for a ConfigError or a corrupt-file message."""
        return f"nested more than {limit} levels deep (refused before parsing)"


_YAML_SPECIAL = re.compile(r"[\[\]{}\"'#]")
_DQ_END = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"')
_SQ_END = re.compile(r"[^']*(?:''[^']*)*'")
_JSON_SPECIAL = re.compile(r'[\[\]{}"\\]')
_COMPACT = re.compile(r"(?:[-?:](?:[ \t]+|$))+")
_BLOCK_SCALAR = re.compile(r"(?:^|[ \t])[|>][-+0-9]*[ \t]*(?:#.*)?$")


def yaml_too_deep(text: str, limit: int = MAX_NESTING_DEPTH) -> TooDeep | None:
    """The first place ``text`` nests deeper than ``limit``, or None.

    Fast path (C-speed string counts): with fewer than ``limit // 2`` brackets and no line
    whose prefix of blanks and indicators is ``limit // 2`` long, the depth cannot exceed the
    limit (every level costs a bracket or a prefix character).
    """
    half = limit // 2
    if text.count("[") + text.count("{") < half and not re.search(
        rf"^[ \t?:-]{{{half}}}", text, re.MULTILINE
    ):
        return None
    indents: list[int] = []
    flow = 0
    quote = ""
    scalar_indent = -1  # inside a block scalar (| or >) whose key sits at this indent
    for lineno, line in enumerate(text.split("\n"), start=1):
        start = 0
        block = len(indents)
        if not quote and flow == 0:
            stripped = line.lstrip(" ")
            indent = len(line) - len(stripped)
            if not stripped.strip() or stripped.startswith("#"):
                continue
            if scalar_indent >= 0:
                if indent > scalar_indent:
                    continue
                scalar_indent = -1
            while indents and indents[-1] >= indent:
                indents.pop()
            indents.append(indent)
            compact = _COMPACT.match(line, indent)
            start = compact.end() if compact else indent
            block = len(indents) + (line.count("-", indent, start) if compact else 0)
            if block > limit:
                return TooDeep(block, lineno)
        prev = line[start - 1] if start else " "
        pos = start
        while pos < len(line):
            if quote:  # skip the rest of a quoted string in one regex match
                end = (_DQ_END if quote == '"' else _SQ_END).match(line, pos)
                if end is None:
                    break  # the string goes on on the next line
                quote, pos = "", end.end()
                continue
            match = _YAML_SPECIAL.search(line, pos)
            if match is None:
                break
            ch, at = match.group(), match.start()
            before = line[at - 1] if at > start else prev
            pos = at + 1
            if ch == "#" and before in " \t":
                break
            if ch in "\"'":
                if before in " \t[{,:-?":  # a quote starts a scalar; "it's" is plain text
                    quote = ch
            elif ch in "[{":
                flow += 1
                if block + flow > limit:
                    return TooDeep(block + flow, lineno)
            else:
                flow = max(0, flow - 1)
        if not quote and flow == 0 and _BLOCK_SCALAR.search(line):
            scalar_indent = len(line) - len(line.lstrip(" "))
    return None


def loads_bounded(text: str | bytes, limit: int = MAX_NESTING_DEPTH) -> Any:
    """``json.loads`` that raises ``ValueError`` (never ``RecursionError``) on deep input.

    ``json`` is recursion-guarded in C, so parsing first is safe and fast; the result is then
    measured without recursion, so nothing later walks a structure deeper than ``limit``.
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(f"nested more than {limit} levels deep") from None
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        if isinstance(node, (dict, list)):
            if depth > limit:
                raise ValueError(f"nested more than {limit} levels deep")
            stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return value


def json_too_deep(text: str, limit: int = MAX_NESTING_DEPTH) -> TooDeep | None:
    """The first place JSON ``text`` nests deeper than ``limit``, or None (exact for JSON)."""
    if text.count("[") + text.count("{") <= limit:
        return None
    depth = 0
    in_string = False
    escape_next = -1
    for match in _JSON_SPECIAL.finditer(text):
        ch, at = match.group(), match.start()
        if at == escape_next:
            continue
        if ch == "\\":
            escape_next = at + 1
        elif ch == '"':
            in_string = not in_string
        elif in_string:
            continue
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return TooDeep(depth, text.count("\n", 0, at) + 1)
        else:
            depth -= 1
    return None
