"""What a model may send: limits and repairs applied where its output enters (stream assembly).

A model's output is untrusted input: it may have been prompt-injected by a web page, or be
broken. Whatever it streams is bounded and made safe here, in the provider adapters, before
any other layer sees it (specs/202611232240.model-output-limits.md):

- **reply size**: after ``max_reply_bytes`` (text plus tool-call arguments, UTF-8) the stream
  is no longer read; the text kept so far is the reply, with a note saying it was cut, and no
  tool call of that response runs (they may be incomplete);
- **tool-call argument size**: an argument past ``max_tool_argument_bytes`` stops the stream
  too; that call is kept with a rejection the agentic loop reports to the model;
- **nesting depth** of the arguments' JSON: deeper than ``max_tool_argument_depth`` is
  rejected the same way (parsers recurse: a deep one is a ``RecursionError``, or worse);
- **invalid Unicode** (lone surrogates, raw or as JSON escapes of D800-DFFF) becomes U+FFFD,
  so nothing later (JSON responses, the event log, ``policy.local.yaml``) meets an unencodable
  string.

A rejected call keeps its id and name (the response and its result still pair up) and gets
the arguments ``{"_duragent_rejected": "<why>"}``: readable by the model on replay, and never
run by the loop.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from duragent.core.messages import ToolCall

__all__ = [
    "CALL_OVERHEAD",
    "REJECTED_KEY",
    "OutputLimits",
    "ReplyGuard",
    "check_arguments",
    "checked_calls",
    "rejection",
    "repair_text",
]

REJECTED_KEY = "_duragent_rejected"
"""The only key of the arguments of a call refused at the boundary; its value says why."""

CALL_OVERHEAD = 64
"""What one tool call counts against ``max_reply_bytes`` besides its arguments."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputLimits:
    """The agent's ``spec.session`` limits on one model response (defaults as there)."""

    max_reply_bytes: int = 512 << 10
    max_tool_argument_bytes: int = 256 << 10
    max_tool_argument_depth: int = 64


def repair_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (adjacent pairs are joined)."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def rejection(reason: str) -> str:
    """The arguments text of a call refused at the boundary."""
    return json.dumps({REJECTED_KEY: reason})


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests containers more than ``limit`` deep (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def check_arguments(arguments: str, limits: OutputLimits) -> str:
    """The arguments text to keep: repaired, or a rejection when too deep or too big.

    Text that is not JSON is kept (repaired): the loop answers it with "Invalid arguments",
    which the model can correct.
    """
    size = len(arguments.encode("utf-8", "surrogatepass"))
    if size > limits.max_tool_argument_bytes:
        return rejection(_too_big(size, limits))
    text = repair_text(arguments)
    try:
        value = json.loads(text or "{}")
    except RecursionError:
        return rejection(_too_deep(limits))
    except ValueError:
        return text or "{}"
    if _deeper_than(value, limits.max_tool_argument_depth):
        return rejection(_too_deep(limits))
    if _ESCAPED_SURROGATE.search(text):
        dumped = json.dumps(value, ensure_ascii=False)  # lone surrogates stay raw here …
        if _SURROGATE.search(dumped):
            return json.dumps(json.loads(repair_text(dumped)), ensure_ascii=False)  # … and go
    return text or "{}"


def _too_big(size: int, limits: OutputLimits, *, at_least: bool = False) -> str:
    return (
        f"Refused: the arguments of this call were {'over ' if at_least else ''}"
        f"{size:,} bytes, more than max_tool_argument_bytes "
        f"({limits.max_tool_argument_bytes:,}). Send smaller arguments (split the work, or "
        "write large content in several steps)."
    )


def _too_deep(limits: OutputLimits) -> str:
    return (
        "Refused: the arguments of this call nest deeper than max_tool_argument_depth "
        f"({limits.max_tool_argument_depth}). Send flatter JSON."
    )


class ReplyGuard:
    """Meters one streamed response and assembles what is kept of it (see module docstring).

    The provider feeds it every text delta and argument fragment, stops reading as soon as
    ``stopped`` is set, and builds its final response from ``content`` and ``calls``.
    """

    def __init__(self, limits: OutputLimits) -> None:
        self.limits = limits
        self.read = 0
        self.stopped = False
        self.cut = False
        self._text: list[str] = []
        self._over: set[int] = set()
        self._args: dict[int, list[str]] = {}
        self._arg_sizes: dict[int, int] = {}

    def _count(self, size: int) -> None:
        self.read += size
        if self.read > self.limits.max_reply_bytes:
            self.stopped = self.cut = True

    def text(self, piece: str) -> str:
        """The part of ``piece`` to show and keep (repaired; empty once the cap is reached)."""
        if self.stopped:
            return ""
        size = len(piece.encode("utf-8", "surrogatepass"))
        room = self.limits.max_reply_bytes - self.read
        self._count(size)
        if self.cut:
            piece = piece.encode("utf-8", "surrogatepass")[: max(0, room)].decode("utf-8", "ignore")
        piece = repair_text(piece)
        if piece:
            self._text.append(piece)
        return piece

    def new_call(self) -> None:
        """Count a call's head (id, name, bookkeeping) against the reply size.

        A response of 100,000 calls with empty arguments is no cheaper to hold than their
        arguments would be: each call counts as ``CALL_OVERHEAD`` bytes.
        """
        if not self.stopped:
            self._count(CALL_OVERHEAD)

    def argument(self, index: int, piece: str) -> None:
        """Add a fragment of call ``index``'s arguments."""
        if self.stopped or not piece:
            return
        size = len(piece.encode("utf-8", "surrogatepass"))
        total = self._arg_sizes.get(index, 0) + size
        self._arg_sizes[index] = total
        if total > self.limits.max_tool_argument_bytes:
            self._over.add(index)
            self.stopped = True  # stop reading: the rest of this argument is not kept
            return
        self._count(size)
        if not self.cut:
            self._args.setdefault(index, []).append(piece)

    @property
    def content(self) -> str:
        """The text kept, with the ``note`` when the reply was cut at ``max_reply_bytes``."""
        return "".join(self._text) + self.note

    @property
    def note(self) -> str:
        """What is appended to a reply cut at ``max_reply_bytes`` (empty when it was not).

        Providers also stream it as a last text delta, so a client shows what is stored.
        """
        if not self.cut:
            return ""
        return (
            f"\n\n[duragent: the model's reply was cut here: it passed max_reply_bytes "
            f"({self.limits.max_reply_bytes:,} bytes); the rest was not read, and no tool "
            "call of this reply was run.]"
        )

    def calls(self, heads: Iterable[tuple[int, str, str]]) -> tuple[ToolCall, ...]:
        """The calls to keep: ``heads`` are (index, id, name) in order; none once cut."""
        if self.cut:
            return ()
        calls: list[ToolCall] = []
        for index, call_id, name in heads:
            if index in self._over:
                size = self._arg_sizes[index]
                arguments = rejection(_too_big(size, self.limits, at_least=True))
            else:
                arguments = check_arguments("".join(self._args.get(index, ())), self.limits)
            calls.append(
                ToolCall(id=repair_text(call_id), name=repair_text(name), arguments=arguments)
            )
        return tuple(calls)


def checked_calls(calls: Iterable[ToolCall], limits: OutputLimits) -> tuple[ToolCall, ...]:
    """Calls from a non-streamed answer, checked and repaired like streamed ones."""
    return tuple(
        ToolCall(
            id=repair_text(c.id),
            name=repair_text(c.name),
            arguments=check_arguments(c.arguments, limits),
        )
        for c in calls
    )
