"""The OpenAPI 3.1 document for the HTTP API (served at ``/openapi.json``).

Written by hand next to the routes so it says exactly what they do; a fuzz test
(schemathesis) checks the server against it.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["openapi_document"]

_PROBLEM = {"$ref": "#/components/schemas/Problem"}


def _problem(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/problem+json": {"schema": _PROBLEM}},
    }


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


_SESSION_ID = {
    "name": "session_id",
    "in": "path",
    "required": True,
    "schema": {"type": "string"},
}
_NON_BLANK = {"type": "string", "minLength": 1, "pattern": "\\S"}  # not only whitespace
_AUTH = {
    "401": _problem("Missing or invalid bearer token, or a non-loopback client"),
    "403": _problem("A browser request refused: Host or Origin not allowed"),
}
_STORAGE = {
    "503": _problem(
        "The disk refused a read or write (permission, I/O, open files): nothing saved was "
        "lost; retry once fixed (Retry-After)"
    ),
    "507": _problem("The disk is full: nothing saved was lost, the request was not recorded"),
}
_COMMON = {
    "400": _problem("Bad input"),
    "415": _problem("Body not application/json"),
    **_AUTH,
    **_STORAGE,
}


def _body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def _plain(description: str) -> dict[str, Any]:
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


def _stream_event() -> dict[str, Any]:
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
            _event("start", {"type": "object"}),
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
                    status={"enum": ["complete", "awaiting_approval", "duplicate"]},
                    usage=usage,
                    call_id=text,
                    command=text,
                ),
            ),
            _event("error", _object(["message"], message=text)),
        ]
    }


def openapi_document(version: str) -> dict[str, Any]:
    """The whole document, a fresh copy (no caller can alter the module's shared parts)."""
    return copy.deepcopy(_document(version))


def _document(version: str) -> dict[str, Any]:
    text = {"type": "string"}
    return {
        "openapi": "3.1.0",
        "info": {"title": "duragent", "version": version},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Problem": {
                    "type": "object",
                    "required": ["type", "title", "status"],
                    "properties": {
                        "type": text,
                        "title": text,
                        "status": {"type": "integer"},
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
                    },
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
                        "role": {"enum": ["user", "assistant", "tool"]},
                        "content": text,
                        "seq": {"type": "integer"},
                        "timestamp": text,
                        "message_id": text,
                        "call_id": text,
                        "success": {"type": "boolean"},
                        "tool_calls": {"type": "array"},
                    },
                },
                "Content": {
                    "type": "object",
                    "required": ["content"],
                    "properties": {"content": _NON_BLANK},
                },
            },
        },
        "security": [{"bearer": []}, {}],
        "paths": {
            "/livez": {
                "get": {
                    "summary": "Liveness",
                    "security": [],
                    "responses": {
                        "200": {"description": "ok", "content": {"text/plain": {"schema": text}}}
                    },
                }
            },
            "/readyz": {
                "get": {
                    "summary": "Readiness",
                    "security": [],
                    "responses": {
                        "200": _json({"type": "object", "required": ["status", "workspace_hash"]}),
                        "503": _json(
                            {"type": "object", "required": ["status", "storage"]},
                            "Not ready: the session store cannot write",
                        ),
                    },
                }
            },
            "/version": {
                "get": {
                    "summary": "Version",
                    "security": [],
                    "responses": {"200": _json({"type": "object", "required": ["version"]})},
                }
            },
            "/api/v1/agents": {
                "get": {
                    "summary": "List agents",
                    "responses": {
                        "200": _json({"type": "object", "required": ["agents"]}),
                        **_AUTH,
                    },
                }
            },
            "/api/v1/agents/{name}": {
                "get": {
                    "summary": "Agent definition",
                    "parameters": [
                        {"name": "name", "in": "path", "required": True, "schema": text}
                    ],
                    "responses": {
                        "200": _json({"type": "object"}),
                        "404": _problem("No such agent"),
                        **_AUTH,
                    },
                }
            },
            "/api/v1/sessions": {
                "post": {
                    "summary": "Create a session",
                    "requestBody": _body(
                        {
                            "type": "object",
                            "required": ["agent"],
                            "properties": {"agent": _NON_BLANK},
                        }
                    ),
                    "responses": {
                        "201": _json(_ref("Session"), "Created"),
                        "404": _problem("No such agent"),
                        "413": _problem("Body too large"),
                        **_COMMON,
                    },
                },
                "get": {
                    "summary": "List sessions, newest first",
                    "parameters": [
                        {
                            "name": "limit",
                            "in": "query",
                            "schema": {"type": "integer", "minimum": 1, "maximum": 1000},
                        }
                    ],
                    "responses": {
                        "200": _json({"type": "object", "required": ["sessions"]}),
                        **_COMMON,
                    },
                },
            },
            "/api/v1/sessions/{session_id}": {
                "get": {
                    "summary": "Session",
                    "parameters": [_SESSION_ID],
                    "responses": {
                        "200": _json(_ref("Session")),
                        "404": _problem("No such session"),
                        "409": _problem("Session quarantined (the reason is in the problem)"),
                        **_AUTH,
                        **_STORAGE,
                    },
                },
                "delete": {
                    "summary": "Delete a session",
                    "parameters": [_SESSION_ID],
                    "responses": {
                        "204": {"description": "Deleted"},
                        "404": _problem("No such session"),
                        "409": _problem("Session quarantined"),
                        **_AUTH,
                        **_STORAGE,
                    },
                },
            },
            "/api/v1/sessions/{session_id}/messages": {
                "get": {
                    "summary": "The last N messages",
                    "parameters": [
                        _SESSION_ID,
                        {
                            "name": "limit",
                            "in": "query",
                            "schema": {"type": "integer", "minimum": 1, "maximum": 10000},
                        },
                        {"name": "include_tools", "in": "query", "schema": {"type": "boolean"}},
                    ],
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "required": ["messages"],
                                "properties": {
                                    "messages": {"type": "array", "items": _ref("Message")}
                                },
                            }
                        ),
                        "404": _problem("No such session"),
                        "409": _problem("Quarantined"),
                        **_COMMON,
                    },
                },
                "post": {
                    "summary": "Send a message and wait for the reply (runs tools)",
                    "parameters": [_SESSION_ID],
                    "requestBody": _body(_ref("Content")),
                    "responses": {
                        "200": _json(_ref("Reply")),
                        "202": _json(_ref("Pending"), "A tool call waits for approval"),
                        "404": _problem("No such session"),
                        "408": _problem("Turn still running"),
                        "409": _problem("Quarantined"),
                        "413": _problem("Body too large"),
                        "502": _problem("The model failed"),
                        **_COMMON,
                    },
                },
            },
            "/api/v1/sessions/{session_id}/stream": {
                "post": {
                    "summary": "Send a message; the reply streams as Server-Sent Events",
                    "parameters": [_SESSION_ID],
                    "requestBody": _body(_ref("Content")),
                    "responses": {
                        "200": {
                            "description": "start, token, tool_call, tool_result, "
                            "approval_required, done, error events",
                            "content": {"text/event-stream": {"schema": _stream_event()}},
                        },
                        "404": _problem("No such session"),
                        "409": _problem("Quarantined"),
                        "413": _problem("Body too large"),
                        **_COMMON,
                    },
                }
            },
            "/api/v1/sessions/{session_id}/approve": {
                "post": {
                    "summary": "Decide on the pending tool call",
                    "parameters": [_SESSION_ID],
                    "requestBody": _body(
                        {
                            "type": "object",
                            "required": ["call_id", "decision"],
                            "properties": {
                                "call_id": _NON_BLANK,
                                "decision": {"enum": ["allow_once", "allow_always", "deny"]},
                                "command": text,
                            },
                        }
                    ),
                    "responses": {
                        "200": _json(_ref("Reply")),
                        "202": _json(_ref("Pending"), "Another call waits for approval"),
                        "404": _problem("No session or no pending approval"),
                        "409": _problem(
                            "The pending approval is for another call_id, or quarantined"
                        ),
                        "413": _problem("Body too large"),
                        "502": _problem("The model failed"),
                        **_COMMON,
                    },
                }
            },
            "/api/admin/v1/shutdown": {
                "post": {
                    "summary": "Stop the server",
                    "responses": {
                        "200": _plain("Shutdown initiated"),
                        "409": _problem("Already shutting down"),
                        "403": _problem("Admin access denied, or Host/Origin not allowed"),
                    },
                }
            },
            "/api/admin/v1/reload-agents": {
                "post": {
                    "summary": "Re-read agents",
                    "responses": {
                        "200": _plain("Reloaded"),
                        "403": _problem("Admin access denied, or Host/Origin not allowed"),
                    },
                }
            },
        },
    }
