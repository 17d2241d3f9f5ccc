"""The OpenAPI 3.1 document for the HTTP API (served at ``/openapi.json``).

Written by hand next to the routes so it says exactly what they do; a fuzz test
(schemathesis) checks the server against it. The paths are here; the response helpers, the
shared schemas and the stream's events are in ``schemas``.
"""

from __future__ import annotations

import copy
from typing import Any

from duragent.gateways.http.api.paging import MAX_MESSAGES_LIMIT, MAX_SESSIONS_LIMIT
from duragent.gateways.http.api.pins import pin_paths
from duragent.gateways.http.openapi.attachment_paths import (
    attachment_paths,
    attachment_schemas,
    message_body,
)
from duragent.gateways.http.openapi.openai_paths import openai_paths
from duragent.gateways.http.openapi.schemas import (
    AUTH,
    COMMON,
    IDEMPOTENCY_KEY,
    NON_BLANK,
    SESSION_ID,
    STORAGE,
    component_schemas,
    json_body,
    json_response,
    limit_parameter,
    limited_response,
    plain,
    problem,
    ref,
    stream_event,
)

_READY_STORAGE = {
    "type": "object",
    "required": ["kind", "writable"],
    "properties": {
        "kind": {"enum": ["files", "database"]},
        "writable": {"type": "boolean"},
        "error": {"type": "string"},
    },
}
"""``/readyz``'s ``storage``: which store, and whether it takes writes now."""

__all__ = ["openapi_document"]


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
            "schemas": component_schemas() | attachment_schemas(),
        },
        "security": [{"bearer": []}, {}],
        "paths": {
            "/livez": {
                "get": {
                    "summary": "Liveness",
                    "security": [],
                    "responses": {"200": plain("ok (text, as probes expect)")},
                }
            },
            "/readyz": {
                "get": {
                    "summary": "Readiness",
                    "security": [],
                    "responses": {
                        "200": json_response(
                            {
                                "type": "object",
                                "required": ["status", "workspace_hash", "storage"],
                                "properties": {"storage": _READY_STORAGE},
                            }
                        ),
                        # what ``app.readyz`` answers: a problem, ``storage.error`` when the
                        # store cannot write (starting or a full server say why in ``detail``)
                        "503": problem(
                            "Not ready: starting, no connection slot free, or the session "
                            "store cannot write (then `storage`: {kind, writable: false, "
                            "error}); the reason in `detail`, with `workspace_hash` and `pid`"
                        ),
                    },
                }
            },
            "/version": {
                "get": {
                    "summary": "Version",
                    "security": [],
                    "responses": {
                        "200": json_response({"type": "object", "required": ["version"]})
                    },
                }
            },
            "/api/v1/agents": {
                "get": {
                    "summary": "List agents",
                    "responses": {
                        "200": json_response({"type": "object", "required": ["agents"]}),
                        **AUTH,
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
                        "200": json_response({"type": "object"}),
                        "404": problem("No such agent"),
                        **AUTH,
                    },
                }
            },
            "/api/v1/sessions": {
                "post": {
                    "summary": "Create a session",
                    "requestBody": json_body(
                        {
                            "type": "object",
                            "required": ["agent"],
                            "properties": {"agent": NON_BLANK},
                        }
                    ),
                    "responses": {
                        "201": json_response(ref("Session"), "Created"),
                        "404": problem("No such agent"),
                        "413": problem("Body too large"),
                        **COMMON,
                    },
                },
                "get": {
                    "summary": "List sessions, newest first",
                    "parameters": [limit_parameter(100, MAX_SESSIONS_LIMIT)],
                    "responses": {
                        "200": limited_response(
                            {"type": "object", "required": ["sessions"]}, MAX_SESSIONS_LIMIT
                        ),
                        **COMMON,
                    },
                },
            },
            "/api/v1/sessions/{session_id}": {
                "get": {
                    "summary": "Session",
                    "parameters": [SESSION_ID],
                    "responses": {
                        "200": json_response(ref("Session")),
                        "404": problem("No such session"),
                        "409": problem("Session quarantined (the reason is in the problem)"),
                        **AUTH,
                        **STORAGE,
                    },
                },
                "delete": {
                    "summary": "Delete a session",
                    "parameters": [SESSION_ID],
                    "responses": {
                        "204": {"description": "Deleted"},
                        "404": problem("No such session"),
                        "409": problem("Session quarantined"),
                        **AUTH,
                        **STORAGE,
                    },
                },
            },
            "/api/v1/sessions/{session_id}/messages": {
                "get": {
                    "summary": "The last N messages",
                    "parameters": [
                        SESSION_ID,
                        limit_parameter(100, MAX_MESSAGES_LIMIT),
                        {"name": "include_tools", "in": "query", "schema": {"type": "boolean"}},
                    ],
                    "responses": {
                        "200": limited_response(
                            {
                                "type": "object",
                                "required": ["messages"],
                                "properties": {
                                    "messages": {"type": "array", "items": ref("Message")}
                                },
                            },
                            MAX_MESSAGES_LIMIT,
                        ),
                        "404": problem("No such session"),
                        "409": problem("Quarantined"),
                        **COMMON,
                    },
                },
                "post": {
                    "summary": "Send a message and wait for the reply (runs tools)",
                    "parameters": [SESSION_ID, IDEMPOTENCY_KEY],
                    "requestBody": message_body(),
                    "responses": {
                        "200": json_response(ref("Reply")),
                        "202": json_response(ref("Pending"), "A tool call waits for approval"),
                        "404": problem("No such session, or it has ended"),
                        "408": problem("Turn still running"),
                        "409": problem(
                            "Quarantined, the session's pins no longer fit its agent "
                            "(detail names them and how to unpin), or this message's turn was "
                            "cut and never answered (code turn_interrupted: message_recorded, "
                            "message_seq, tool_calls with each call's outcome)"
                        ),
                        "413": problem("Body too large, or an attachment (the problem's field)"),
                        "502": problem("The model failed"),
                        **COMMON,
                    },
                },
            },
            "/api/v1/sessions/{session_id}/stream": {
                "post": {
                    "summary": "Send a message; the reply streams as Server-Sent Events",
                    "parameters": [SESSION_ID, IDEMPOTENCY_KEY],
                    "requestBody": message_body(),
                    "responses": {
                        "200": {
                            "description": "start, token, tool_call, tool_result, "
                            "approval_required, summary, done, error, cancelled events",
                            "content": {"text/event-stream": {"schema": stream_event()}},
                        },
                        "404": problem("No such session, or it has ended"),
                        "409": problem("Quarantined"),
                        "413": problem("Body too large, or an attachment (the problem's field)"),
                        **COMMON,
                    },
                }
            },
            "/api/v1/sessions/{session_id}/approve": {
                "post": {
                    "summary": "Decide on the pending tool call",
                    "parameters": [SESSION_ID],
                    "requestBody": json_body(
                        {
                            "type": "object",
                            "required": ["call_id", "decision"],
                            "properties": {
                                "call_id": NON_BLANK,
                                "decision": {"enum": ["allow_once", "allow_always", "deny"]},
                                "command": text,
                            },
                        }
                    ),
                    "responses": {
                        "200": json_response(ref("Reply")),
                        "202": json_response(ref("Pending"), "Another call waits for approval"),
                        "404": problem("No session, it has ended, or no pending approval"),
                        "409": problem(
                            "The pending approval is for another call_id, quarantined, or the "
                            "session's pins no longer fit its agent"
                        ),
                        "413": problem("Body too large"),
                        "502": problem("The model failed"),
                        **COMMON,
                    },
                }
            },
            "/api/v1/sessions/{session_id}/end": {
                "post": {
                    "summary": "End a session: completed, files kept, no more turns",
                    "parameters": [SESSION_ID],
                    "responses": {
                        "200": json_response(ref("Session")),
                        "404": problem("No such session"),
                        "409": problem("Session quarantined"),
                        **AUTH,
                        **STORAGE,
                    },
                }
            },
            **attachment_paths(),
            **schedule_paths(),
            **openai_paths(),
            **pin_paths(),
            "/metrics": {
                "get": {
                    "summary": "Prometheus metrics (text exposition format)",
                    "description": "The admin token when one is set, else the API token, else "
                    "loopback clients only; 404 when server.metrics is false.",
                    "responses": {
                        "200": plain("Every metric, in Prometheus' text format"),
                        "401": problem("Missing or invalid bearer token"),
                        "403": problem("Admin access denied, or Host/Origin not allowed"),
                        "404": problem("Metrics are off (server.metrics: false)"),
                    },
                }
            },
            "/api/admin/v1/shutdown": {
                "post": {
                    "summary": "Stop the server",
                    "responses": {
                        "200": json_response(
                            {
                                "type": "object",
                                "required": ["status", "message"],
                                "properties": {
                                    "status": {"const": "shutting_down"},
                                    "message": {"const": "Shutdown initiated"},
                                },
                            },
                            "Stopping: sessions are saved, then the process exits",
                        ),
                        "409": problem("Already shutting down"),
                        "403": problem("Admin access denied, or Host/Origin not allowed"),
                    },
                }
            },
            "/api/admin/v1/reload-agents": {
                "post": {
                    "summary": "Re-read agents",
                    "responses": {
                        "200": json_response(
                            {
                                "type": "object",
                                "required": ["reloaded", "agents", "broken", "message"],
                                "properties": {
                                    "reloaded": {"type": "integer", "minimum": 0},
                                    "agents": {"type": "array", "items": text},
                                    "broken": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": ["path", "error"],
                                            "properties": {"path": text, "error": text},
                                        },
                                    },
                                    "message": {"description": "Reloaded N agents", **text},
                                    "endpoint_changes": {
                                        "type": "array",
                                        "items": text,
                                        "description": "Agents whose spec.model provider, "
                                        "base_url host or key variable differs from when the "
                                        "server started (also logged as a WARNING)",
                                    },
                                    "changes": reload_changes(),
                                    "notes": {
                                        "type": "array",
                                        "items": text,
                                        "description": "Where the change took effect, when it "
                                        "matters: with several nodes, the one that runs the "
                                        "scheduler runs what its own agent files declare",
                                    },
                                },
                            },
                            "The agents now served, the folders that failed to load, and what "
                            "the reload changed",
                        ),
                        "403": problem("Admin access denied, or Host/Origin not allowed"),
                    },
                }
            },
        },
    }


def reload_changes() -> dict[str, Any]:
    """What ``reload-agents`` changed: agents and the schedules they declare, by name / id."""
    names = {"type": "array", "items": {"type": "string"}}
    fields = {"added": names, "removed": names, "changed": names}
    parts = {
        "type": "object",
        "additionalProperties": names,
        "description": "For each changed agent, what changed in it (metadata, spec.tools, "
        "spec.access, spec.hooks, spec.schedules…, soul, skills…)",
    }
    required = ["added", "removed", "changed"]
    return {
        "type": "object",
        "required": ["agents", "schedules"],
        "properties": {
            "agents": {
                "type": "object",
                "required": required,
                "properties": fields | {"parts": parts},
            },
            "schedules": {
                "type": "object",
                "required": required,
                "properties": fields,
                "description": "Schedules declared in spec.schedules (ids decl_<agent>_<name>): "
                "added ones run their due times from now on, removed ones never run again",
            },
        },
    }


def schedule_paths() -> dict[str, Any]:
    """``/api/v1/schedules`` (``api/schedules.py``)."""
    schedule = {
        "type": "object",
        "required": ["id", "agent", "schedule", "payload", "status"],
        "description": "The schedule file's fields, its run state and declared_in",
    }
    sched_id = {"name": "schedule_id", "in": "path", "required": True, "schema": NON_BLANK}
    off = problem("The scheduler is disabled")
    down = problem("The scheduler is disabled, did not start, or its loop ended")
    return {
        "/api/v1/schedules": {
            "get": {
                "summary": "List schedules",
                "parameters": [
                    {
                        "name": "agent",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "string"},
                    }
                ],
                "responses": {
                    "200": json_response({"type": "object", "required": ["schedules"]}),
                    "503": off,
                    **AUTH,
                },
            },
            "post": {
                "summary": "Create a schedule (the file format less id, created_at, status)",
                "requestBody": json_body(schedule_body()),
                "responses": {
                    "201": json_response(schedule, "Created"),
                    "409": problem("Refused: no such agent"),
                    "413": problem("Body too large"),
                    **COMMON,
                    "503": down,
                },
            },
        },
        "/api/v1/schedules/{schedule_id}": {
            "get": {
                "summary": "A schedule with its run state and recent runs",
                "parameters": [sched_id],
                "responses": {
                    "200": json_response(schedule),
                    "404": problem("No such schedule"),
                    "503": off,
                    **AUTH,
                },
            },
            "delete": {
                "summary": "Cancel a schedule (its file and run log are kept)",
                "parameters": [sched_id],
                "responses": {
                    "200": json_response(schedule),
                    "404": problem("No such schedule"),
                    "409": problem("Declared in an agent's YAML: remove it there"),
                    **AUTH,
                    **STORAGE,
                    "503": off,
                },
            },
        },
        "/api/v1/schedules/{schedule_id}/run": {
            "post": {
                "summary": "Run a schedule now",
                "parameters": [sched_id],
                "responses": {
                    "202": json_response(
                        {"type": "object", "required": ["schedule_id", "started"]}, "Started"
                    ),
                    "404": problem("No such schedule"),
                    "409": problem("A run is in progress"),
                    "503": down,
                    **AUTH,
                },
            }
        },
    }


def schedule_body() -> dict[str, Any]:
    """A new schedule: the file format less ``id``, ``created_at`` and ``status``.

    Cron expressions and time zones are checked by the scheduler (a 400 names the field):
    JSON Schema cannot describe which strings are valid ones.
    """
    text = {"type": "string"}
    time = {"type": "string", "format": "date-time"}

    def one(key: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"type": "object", "required": [key], "properties": {key: body},
                "additionalProperties": False}  # fmt: skip

    def fields(required: list[str], **props: Any) -> dict[str, Any]:
        return {"type": "object", "required": required, "properties": props}

    count = {"type": "integer", "minimum": 0, "maximum": 1_000_000_000}
    seconds = {"type": "integer", "minimum": 1, "maximum": 1_000_000_000}
    retries = {"type": "integer", "minimum": 0, "maximum": 100}
    return {
        "type": "object",
        "required": ["agent", "schedule", "payload"],
        "additionalProperties": False,
        "properties": {
            "agent": NON_BLANK,
            "schedule": {
                "oneOf": [
                    one("at", fields(["at"], at=time)),
                    one("every", fields(["every_seconds"], every_seconds=seconds, anchor=time)),
                    one("cron", fields(["expr"], expr=NON_BLANK, tz=text)),
                ]
            },
            "payload": {
                "oneOf": [
                    one("message", fields(["message"], message=NON_BLANK)),
                    one("task", fields(["task"], task=NON_BLANK)),
                ]
            },
            "destination": fields(["gateway", "chat_id"], gateway=NON_BLANK, chat_id=NON_BLANK),
            "retry": fields([], max_retries=retries, initial_delay_ms=count, max_delay_ms=count),
        },
    }
