"""The parts the OpenAPI document is built from: response helpers, shared schemas, SSE events.

Split from ``document`` (which keeps the document and its paths) so neither passes 400 lines;
these parts are what several paths share.
"""

from __future__ import annotations

from typing import Any

from duragent.gateways.http.api.paging import LIMIT_CLAMPED_FIELD, LIMIT_CLAMPED_HEADER
from duragent.gateways.http.server.problem import PROBLEM_TYPES

__all__ = [
    "AUTH",
    "COMMON",
    "IDEMPOTENCY_KEY",
    "NON_BLANK",
    "REPLY_FILES",
    "SESSION_ID",
    "STORAGE",
    "component_schemas",
    "json_body",
    "json_response",
    "limit_parameter",
    "limited_response",
    "plain",
    "problem",
    "ref",
    "stream_event",
]

_PROBLEM = {"$ref": "#/components/schemas/Problem"}


def problem(description: str) -> dict[str, Any]:
    """A problem+json response."""
    return {
        "description": description,
        "content": {"application/problem+json": {"schema": _PROBLEM}},
    }


def json_response(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    """A JSON response with ``schema``."""
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def limit_parameter(default: int, maximum: int) -> dict[str, Any]:
    """``?limit=N`` of a list endpoint (see ``api.paging``: clamped above ``maximum``)."""
    return {
        "name": "limit",
        "in": "query",
        "description": f"How many (default {default}). Above {maximum} the server answers "
        f"{maximum} and says so in {LIMIT_CLAMPED_HEADER} and {LIMIT_CLAMPED_FIELD}; 0, "
        "negative or not an integer: 400.",
        "schema": {"type": "integer", "minimum": 1},
    }


def limited_response(schema: dict[str, Any], maximum: int) -> dict[str, Any]:
    """The 200 of a list endpoint: ``schema`` plus the clamp header and field."""
    response = json_response(
        {
            **schema,
            "properties": {
                **schema.get("properties", {}),
                LIMIT_CLAMPED_FIELD: {
                    "const": maximum,
                    "description": "Present only when the limit asked for was clamped",
                },
            },
        }
    )
    response["headers"] = {
        LIMIT_CLAMPED_HEADER: {
            "description": f"Present only when the limit asked for was above {maximum}: "
            "the limit applied",
            "schema": {"type": "integer", "const": maximum},
        }
    }
    return response


def ref(name: str) -> dict[str, Any]:
    """A reference to a schema of ``component_schemas``."""
    return {"$ref": f"#/components/schemas/{name}"}


SESSION_ID = {
    "name": "session_id",
    "in": "path",
    "required": True,
    "schema": {"type": "string"},
}
IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "The message's key (≤ 200 printable characters): sent again with the same "
    "key (a retry after a lost answer) it is recorded once; an answered one answers "
    '{"status": "duplicate"}, an unanswered one gets its turn. One whose turn was cut (its node '
    "stopped or lost the session to another node while a tool ran) answers what was recorded: "
    "the reply its turn went on to, with `interruption`, or 409 with code `turn_interrupted`.",
    "schema": {"type": "string", "maxLength": 200},
}
CUT_CALLS = {
    "type": "array",
    "description": "The cut turn's tool calls: ran (result recorded), failed, interrupted (cut "
    "before its result was recorded; it may have run in part or whole) or skipped",
    "items": {
        "type": "object",
        "required": ["call_id", "name", "outcome"],
        "properties": {
            "call_id": {"type": "string"},
            "name": {"type": "string"},
            "outcome": {"enum": ["ran", "failed", "interrupted", "skipped"]},
        },
    },
}
REPLY_FILES = {
    "type": "array",
    "minItems": 1,
    "items": ref("Attachment"),
    "description": "The files the agent sent with the reply (send_file), each with its url; "
    "present only when there are some",
}
NON_BLANK = {"type": "string", "minLength": 1, "pattern": "\\S"}  # not only whitespace
AUTH = {
    "401": problem("Missing or invalid bearer token, or a non-loopback client"),
    "403": problem("A browser request refused: Host or Origin not allowed"),
}
STORAGE = {
    "503": problem(
        "The disk refused a read or write (permission, I/O, open files): nothing saved was "
        "lost; retry once fixed (Retry-After)"
    ),
    "507": problem("The disk is full: nothing saved was lost, the request was not recorded"),
}
COMMON = {
    "400": problem("Bad input"),
    "415": problem("Body not application/json"),
    **AUTH,
    **STORAGE,
}


def json_body(schema: dict[str, Any]) -> dict[str, Any]:
    """A required JSON request body."""
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def plain(description: str) -> dict[str, Any]:
    """A text/plain response."""
    return {"description": description, "content": {"text/plain": {"schema": {"type": "string"}}}}


def _object(required: list[str], **properties: Any) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": properties}


def _event(name: str, data: dict[str, Any]) -> dict[str, Any]:
    """One Server-Sent Event: its name and its JSON ``data``."""
    return _object(
        ["event", "data"],
        event={"const": name},
        data={
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": data,
        },
    )


def stream_event() -> dict[str, Any]:
    """Any event of ``POST …/stream``, as ``{event, data, id, retry}``.

    Before OpenAPI 3.2's ``itemSchema``, the ``schema`` of a ``text/event-stream`` describes
    each event (schemathesis validates every event against it).
    """
    text = {"type": "string"}
    usage = _object(
        ["prompt_tokens", "completion_tokens", "total_tokens"],
        prompt_tokens={"type": "integer"},
        completion_tokens={"type": "integer"},
        total_tokens={"type": "integer"},
    )
    return {
        "oneOf": [
            _event(
                "start",
                _object(
                    ["turn_id"],
                    turn_id=text,
                    attachments={"type": "array", "items": ref("Attachment")},
                ),
            ),
            _event("token", _object(["content"], content=text)),
            _event(
                "tool_call",
                _object(["call_id", "name", "arguments"], call_id=text, name=text, arguments=text),
            ),
            _event(
                "tool_result",
                _object(
                    ["call_id", "success", "content"],
                    call_id=text,
                    success={"type": "boolean"},
                    content=text,
                ),
            ),
            _event(
                "approval_required", _object(["call_id", "command"], call_id=text, command=text)
            ),
            _event(
                "done",
                _object(
                    ["message_id", "status", "usage"],
                    message_id={"type": ["string", "null"]},
                    status={"enum": ["complete", "awaiting_approval", "duplicate", "error"]},
                    usage=usage,
                    call_id=text,
                    command=text,
                    interruption={"$ref": "#/components/schemas/Interruption"},
                    attachments=REPLY_FILES,
                ),
            ),
            _event(
                "error",
                _object(
                    ["message"],
                    message=text,
                    code={"const": "turn_interrupted"},
                    message_recorded={"type": "boolean"},
                    message_seq={"type": "integer"},
                    idempotency_key={"type": ["string", "null"]},
                    owner={"type": ["string", "null"]},
                    tool_calls=CUT_CALLS,
                ),
            ),
            _event("cancelled", {"type": "object"}),
            _event(
                "summary",
                _object(
                    ["round", "through_seq", "messages"],
                    round={"type": "integer"},
                    through_seq={"type": "integer"},
                    messages={"type": "integer"},
                ),
            ),
        ]
    }


def component_schemas() -> dict[str, Any]:
    """``components.schemas``: the problem, session, reply, pending and message bodies.

    The attachment schemas are ``attachment_paths.attachment_schemas``.
    """
    text = {"type": "string"}
    return {
        "Problem": {
            "type": "object",
            "required": ["type", "title", "status"],
            "properties": {
                "type": {
                    "enum": [kind.urn for kind in PROBLEM_TYPES.values()],
                    "description": "One type per status:\n"
                    + "\n".join(
                        f"- {status} `{kind.urn}` ({kind.title}): {kind.meaning}"
                        for status, kind in PROBLEM_TYPES.items()
                    ),
                },
                "title": text,
                "status": {"enum": list(PROBLEM_TYPES)},
                "detail": text,
                "instance": text,
            },
        },
        "Session": {
            "type": "object",
            "required": ["session_id", "agent", "status", "created_at"],
            "properties": {
                "session_id": text,
                "agent": text,
                "status": {"enum": ["active", "paused", "running", "completed"]},
                "created_at": text,
                "updated_at": text,
                "on_disconnect": text,
                "pending_approval": {"type": "boolean"},
            },
        },
        "Reply": {
            "type": "object",
            "properties": {
                "message_id": {"type": ["string", "null"]},
                "role": {"const": "assistant"},
                "content": text,
                "status": text,
                "session_id": text,
                "interruption": {"$ref": "#/components/schemas/Interruption"},
                "attachments": REPLY_FILES,
            },
        },
        "Interruption": {
            "type": "object",
            "description": "The message's turn was cut (its node stopped or lost the session "
            "to another node while a tool ran) and went on to this reply",
            "required": ["message_seq", "tool_calls"],
            "properties": {"message_seq": {"type": "integer"}, "tool_calls": CUT_CALLS},
        },
        "Pending": {
            "type": "object",
            "required": ["call_id", "command"],
            "properties": {
                "session_id": text,
                "status": {"const": "pending_approval"},
                "call_id": text,
                "command": text,
            },
        },
        "Message": {
            "type": "object",
            "required": ["role"],
            "properties": {
                "role": {"enum": ["user", "assistant", "tool", "summary"]},
                "content": text,
                "seq": {"type": "integer"},
                "round": {"type": "integer"},
                "through_seq": {"type": "integer"},
                "messages": {"type": "integer"},
                "timestamp": text,
                "message_id": text,
                "call_id": text,
                "success": {"type": "boolean"},
                "tool_calls": {"type": "array"},
                "attachments": {"type": "array", "items": ref("Attachment")},
            },
        },
    }
