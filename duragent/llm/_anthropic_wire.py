"""The Anthropic Messages body from cached per-message fragments (see ``_wire_body``).

Produces exactly the bytes of ``to_anthropic_request`` serialised as the SDK serialises it;
``tests/llm/test_request_bytes.py`` compares both on the wire and for awkward histories.
"""

from __future__ import annotations

import json
import operator
from itertools import compress, count, islice
from operator import itemgetter
from typing import Any, NamedTuple

from duragent.core.messages import Message, Role
from duragent.llm._wire_body import FragmentCache, Slicer, dumps, json_array
from duragent.llm.image_parts import anthropic_user_content
from duragent.llm.types import ImageMessage

__all__ = ["FRAGMENTS", "PLACEHOLDER_FIRST_USER", "Fragment", "parse_input", "turns_body"]

PLACEHOLDER_FIRST_USER = "(conversation continues)"


def parse_input(arguments: str) -> dict[str, Any]:
    """Tool-call arguments as the ``input`` object (``{}`` when unparsable or not an object)."""
    try:
        value = json.loads(arguments or "{}")
    except (json.JSONDecodeError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


class Fragment(NamedTuple):
    """One message's part of the body, with what merging it into turns needs.

    ``role`` is the turn it belongs to (``b"user"`` or ``b"assistant"``), or ``b""`` when it
    adds no content block (a system message, hoisted; an assistant message with nothing to
    say). ``kind`` is ``system``, ``result`` (a ``tool_result`` block), ``user`` (a text
    block; an ``ImageMessage``'s image blocks first) or ``assistant`` (text and ``tool_use``
    blocks); ``blocks`` its serialised content blocks, comma-joined (for ``system``: the
    UTF-8 text, empty when blank); ``turn`` the whole turn it makes when no neighbour merges
    with it.
    """

    role: bytes
    kind: str
    blocks: bytes
    turn: bytes


_USER = b"user"
_ASSISTANT = b"assistant"
"""Every fragment's role is one of these two objects (or empty): ``turns_body`` compares by
identity."""


def _fragment(kind: str, blocks: bytes) -> Fragment:
    if kind == "system" or not blocks:
        return Fragment(b"", kind, blocks, b"")
    role = _ASSISTANT if kind == "assistant" else _USER
    return Fragment(role, kind, blocks, _turn(role, [blocks], []))


def _message_fragment(m: Message) -> Fragment:
    """One message's fragment, mirroring ``to_anthropic_request`` message by message.

    Merging neighbours into turns is left to ``turns_body``.
    """
    if m.role is Role.SYSTEM:
        return _fragment("system", m.text.encode() if m.text.strip() else b"")
    if m.role is Role.TOOL:
        block = {
            "type": "tool_result",
            "tool_use_id": m.tool_call_id or "",
            "content": m.text or "(empty result)",
        }
        return _fragment("result", dumps(block))
    if m.role is Role.ASSISTANT:
        blocks: list[dict[str, Any]] = []
        if m.text.strip():
            blocks.append({"type": "text", "text": m.text})
        blocks.extend(
            {"type": "tool_use", "id": c.id, "name": c.name, "input": parse_input(c.arguments)}
            for c in m.tool_calls
        )
        return _fragment("assistant", b",".join(dumps(b) for b in blocks))
    if type(m) is ImageMessage:  # image blocks, then its text (when any)
        images = anthropic_user_content(m.text if m.text.strip() else "", m.images)
        return _fragment("user", b",".join(dumps(b) for b in images))
    text = m.text if m.text.strip() else "(empty)"
    return _fragment("user", dumps({"type": "text", "text": text}))


FRAGMENTS: FragmentCache[Fragment] = FragmentCache(_message_fragment)
"""Each message's fragment, kept while the message lives (see ``_wire_body``)."""

_PLACEHOLDER_TURN = (
    b'{"role":"user","content":[' + dumps({"type": "text", "text": PLACEHOLDER_FIRST_USER}) + b"]}"
)


async def turns_body(fragments: list[Fragment]) -> tuple[str, list[bytes]]:
    """(system text, serialised ``messages`` array) from per-message fragments.

    The same merging as ``to_anthropic_request``: system text hoisted, same-role turns merged
    with tool results first, a placeholder user turn when history does not start with one.
    Every pass over the whole history runs in C (``compress``, ``map``); Python work is only
    spent where neighbours merge (several tool results in one user turn, say), so a
    2,000-message chat costs about what a few messages do.
    """
    every_role = list(map(itemgetter(0), fragments))  # b"" for what adds no content block
    # system messages are among the few without a content block (typically the prompt alone)
    blockless = compress(fragments, map(operator.not_, every_role))
    system = [f.blocks.decode() for f in blockless if f.kind == "system" and f.blocks]
    parts = list(map(itemgetter(3), compress(fragments, every_role)))
    roles = list(compress(every_role, every_role))
    # where a fragment joins the turn before it; runs of joins are merged, newest first so
    # earlier indexes stay valid while the list shrinks (roles are the two constants of
    # ``_fragment``, so identity is equality, and cheaper)
    joins = list(compress(count(1), map(operator.is_, roles, islice(roles, 1, None))))
    content = list(compress(fragments, every_role)) if joins else []
    slicer = Slicer()
    for first, last in reversed(_runs(joins)):
        members = content[first - 1 : last + 1]
        results = [f.blocks for f in members if f.kind == "result"]
        texts = [f.blocks for f in members if f.kind != "result"]
        parts[first - 1 : last + 1] = [_turn(roles[first], results, texts)]
        await slicer.tick()
    if not parts or not parts[0].startswith(b'{"role":"user"'):
        parts.insert(0, _PLACEHOLDER_TURN)
    await slicer.tick()
    return "\n\n".join(system), json_array(parts)


def _runs(joins: list[int]) -> list[tuple[int, int]]:
    """Consecutive indexes grouped into (first, last) runs: [2, 3, 7] → [(2, 3), (7, 7)]."""
    runs: list[tuple[int, int]] = []
    for i in joins:
        if runs and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs


def _turn(role: bytes, results: list[bytes], texts: list[bytes]) -> bytes:
    """One serialised turn; a user turn's tool results come before its text (API rule)."""
    return b'{"role":"' + role + b'","content":[' + b",".join(results + texts) + b"]}"
