"""The Anthropic Messages body from cached per-message fragments (see ``_wire_body``).

Produces exactly the bytes of ``to_anthropic_request`` serialised as the SDK serialises it;
``tests/llm/test_request_bytes.py`` compares both on the wire and for awkward histories.
"""

from __future__ import annotations

import json
from typing import Any

from duragent.core.messages import Message, Role
from duragent.llm._wire_body import FragmentCache, Slicer, dumps, json_array

__all__ = ["FRAGMENTS", "PLACEHOLDER_FIRST_USER", "parse_input", "turns_body"]

PLACEHOLDER_FIRST_USER = "(conversation continues)"


def parse_input(arguments: str) -> dict[str, Any]:
    """Tool-call arguments as the ``input`` object (``{}`` when unparsable or not an object)."""
    try:
        value = json.loads(arguments or "{}")
    except (json.JSONDecodeError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _message_fragment(m: Message) -> tuple[str, bytes]:
    """(kind, payload) of one message: its serialised content blocks, comma-joined.

    Kinds: ``system`` (payload: the UTF-8 text, empty when blank), ``result`` (a user turn's
    ``tool_result`` block), ``user`` (a user text block) and ``assistant`` (its text and
    ``tool_use`` blocks, empty when it has none). Mirrors ``to_anthropic_request`` message by
    message; merging is left to ``turns_body``.
    """
    if m.role is Role.SYSTEM:
        return "system", m.text.encode() if m.text.strip() else b""
    if m.role is Role.TOOL:
        block = {
            "type": "tool_result",
            "tool_use_id": m.tool_call_id or "",
            "content": m.text or "(empty result)",
        }
        return "result", dumps(block)
    if m.role is Role.ASSISTANT:
        blocks: list[dict[str, Any]] = []
        if m.text.strip():
            blocks.append({"type": "text", "text": m.text})
        blocks.extend(
            {"type": "tool_use", "id": c.id, "name": c.name, "input": parse_input(c.arguments)}
            for c in m.tool_calls
        )
        return "assistant", b",".join(dumps(b) for b in blocks)
    text = m.text if m.text.strip() else "(empty)"
    return "user", dumps({"type": "text", "text": text})


FRAGMENTS: FragmentCache[tuple[str, bytes]] = FragmentCache(_message_fragment)
"""Each message's serialised blocks, kept while the message lives (see ``_wire_body``)."""

_PLACEHOLDER_TURN = (
    b'{"role":"user","content":[' + dumps({"type": "text", "text": PLACEHOLDER_FIRST_USER}) + b"]}"
)


async def turns_body(fragments: list[tuple[str, bytes]]) -> tuple[str, list[bytes]]:
    """(system text, serialised ``messages`` array) from per-message fragments.

    The same merging as ``to_anthropic_request``: system text hoisted, same-role turns merged
    with tool results first, a placeholder user turn when history does not start with one.
    """
    system: list[str] = []
    parts: list[bytes] = []
    role = b""
    results: list[bytes] = []
    texts: list[bytes] = []
    slicer = Slicer()
    for i, (kind, payload) in enumerate(fragments):
        if not i % 256:
            await slicer.tick()
        if not payload:
            continue
        if kind == "system":
            system.append(payload.decode())
            continue
        turn_role = b"assistant" if kind == "assistant" else b"user"
        if turn_role != role:
            if role:
                parts.append(_turn(role, results, texts))
            role, results, texts = turn_role, [], []
        (results if kind == "result" else texts).append(payload)
    if role:
        parts.append(_turn(role, results, texts))
    if not parts or not parts[0].startswith(b'{"role":"user"'):
        parts.insert(0, _PLACEHOLDER_TURN)
    await slicer.tick()
    return "\n\n".join(system), json_array(parts)


def _turn(role: bytes, results: list[bytes], texts: list[bytes]) -> bytes:
    """One serialised turn; a user turn's tool results come before its text (API rule)."""
    return b'{"role":"' + role + b'","content":[' + b",".join(results + texts) + b"]}"
